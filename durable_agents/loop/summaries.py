"""Short one-line summaries shown beside each activity in the Temporal Web UI, and `shorten`,
the one helper that cuts text to a limit everywhere (summaries, the CLI, tool observations,
carried steps, repetition quotes, context summaries)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

SUMMARY_MAX_CHARS = 100
ELLIPSIS = "…"


def shorten(
    text: str,
    limit: int = SUMMARY_MAX_CHARS,
    *,
    one_line: bool = True,
    marker: str = ELLIPSIS,
    size: Callable[[str], int] = len,
) -> str:
    """`text` cut to at most `limit`, `marker` included, when it is longer.

    - `one_line`: runs of whitespace (newlines included) first become one space, and the ends
      are stripped; `False` keeps the text's own lines and spacing.
    - `marker`: appended when the text was cut (`""`: a plain cut).
    - `size`: how text is measured: characters by default, or e.g.
      `loop.tokens.estimate_text_tokens` (the cut is then the longest prefix that fits).

    A `limit` smaller than the marker itself gives the marker alone.
    """
    if one_line:
        text = " ".join(text.split())
    if size(text) <= limit:
        return text
    return text[: _longest_prefix(text, limit - size(marker), size)] + marker


def first_line(text: str, limit: int = SUMMARY_MAX_CHARS) -> str:
    """The first line of `text` that holds visible text, shortened: a run's static summary
    (the Web UI shows it in the workflow list and on the run's page)."""
    line = next((line for line in text.splitlines() if line.strip()), "")
    return shorten(line, limit)


def _longest_prefix(text: str, room: int, size: Callable[[str], int]) -> int:
    """The length of the longest prefix of `text` whose size is at most `room` (`size` grows
    with the prefix; `text` itself is larger than `room`)."""
    if room <= 0:
        return 0
    if size is len:
        return room
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if size(text[:middle]) <= room:
            low = middle
        else:
            high = middle - 1
    return low


def model_call_summary(model: str | None, turn: int, purpose: str = "turn") -> str:
    """`gpt-4o · turn 3`, `gpt-4o · final answer`, `gpt-4o · context summary`."""
    what = {
        "turn": f"turn {turn}",
        "final_answer": "final answer",
        "summary": "context summary",
        "plan": "planning",
        "synthesis": "final answer from the plan's steps",
    }
    return f"{model or 'default model'} · {what.get(purpose, purpose)}"


def tool_call_summary(args: dict[str, Any]) -> str:
    """The call's arguments (the Web UI already shows the activity type, i.e. the tool name)."""
    return shorten(json.dumps(args, ensure_ascii=False, sort_keys=True))


def plural(count: int, noun: str) -> str:
    """`1 tool call`, `2 tool calls`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
