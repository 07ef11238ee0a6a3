"""Turn what happened to a tool call into the text the model reads next."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from durable_agents.loop.summaries import shorten

TRUNCATION_MARKER = "\n[... output truncated: showed {shown} of {total} characters ...]"


def truncate_observation(text: str, max_chars: int) -> tuple[str, bool]:
    """Cut `text` to at most `max_chars` characters, marker included; say whether it was cut.

    The marker tells the model how much it sees; room for it is reserved at its widest (the
    count of characters shown has at most as many digits as `max_chars`).
    """
    if len(text) <= max_chars:
        return text, False
    widest = TRUNCATION_MARKER.format(shown=max_chars, total=len(text))
    keep = max(0, max_chars - len(widest))
    marker = TRUNCATION_MARKER.format(shown=keep, total=len(text))
    return shorten(text, keep + len(marker), one_line=False, marker=marker), True


FailureKind = Literal["tool_error", "timeout", "retries_exhausted"]


@dataclass(frozen=True)
class ToolFailure:
    """Why a tool activity did not produce a result, in plain terms (no Temporal types)."""

    kind: FailureKind
    message: str
    timeout_seconds: float = 0.0
    attempts: int = 1


def failure_observation(failure: ToolFailure) -> str:
    """The observation for a failed call: always starts with `Error:` so the model notices."""
    if failure.kind == "timeout":
        timed_out = f"Error: timed out after {failure.timeout_seconds:g}s"
        if failure.attempts > 1:  # a tool that opted into retrying its timeouts
            return f"{timed_out} ({failure.attempts} attempts)"
        return timed_out
    if failure.kind == "retries_exhausted":
        tries = "attempt" if failure.attempts == 1 else "attempts"
        return f"Error: the tool failed after {failure.attempts} {tries}: {failure.message}"
    return f"Error: {failure.message}"
