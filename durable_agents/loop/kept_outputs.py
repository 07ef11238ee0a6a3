"""Which of a delta's tool results the receiving worker keeps, so the delta names them instead
of carrying them (the worker's side: `activities.kept_outputs`). Pure: no Temporal, no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from durable_agents.contracts.messages import ChatMessage


@dataclass(frozen=True)
class KeptOutput:
    """A tool call's output that the worker named `kept_by` keeps under `ref` (the call's
    idempotency key), as the call returned it (`content`)."""

    ref: str
    kept_by: str
    content: str


def refer_to_kept(
    messages: Sequence[ChatMessage],
    kept: Mapping[str, KeptOutput],
    holder: str | None,
) -> tuple[list[ChatMessage], dict[int, str]]:
    """`messages` (a delta's new ones) with each tool result that `holder` keeps left without
    its content, and the ref of each by index. `holder` is the worker whose context cache holds
    the conversation the delta builds on: the only worker that can answer the delta, so naming
    its outputs never makes a call miss that would not miss anyway.

    A result is named only when it is exactly what the call returned (no note, no warning
    added since) and the call ran on that worker; anything else goes whole."""
    if holder is None or not kept:
        return list(messages), {}
    sent: list[ChatMessage] = []
    refs: dict[int, str] = {}
    for index, message in enumerate(messages):
        output = kept.get(message.tool_call_id or "") if message.role == "tool" else None
        if output is not None and output.kept_by == holder and message.content == output.content:
            sent.append(message.model_copy(update={"content": None}))
            refs[index] = output.ref
        else:
            sent.append(message)
    return sent, refs
