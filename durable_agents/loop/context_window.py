"""Fit the messages sent to the model into its context window.

The system message and the original prompt always stay; the most recent messages stay; older
ones are dropped (or, with the `summarize` strategy, replaced by a summary the workflow asks the
model for). An assistant message with tool calls and the tool messages that answer it form one
unit that is kept or dropped whole: providers reject a tool call without its result and a
result without its call.

Token counts are `loop.tokens`' deterministic estimate, not a tokenizer (this runs inside the
workflow, where every worker must reach the same decision on replay); its names are importable
from here too (`estimate_text_tokens`, `estimate_tokens`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from durable_agents.contracts.messages import ChatMessage
from durable_agents.loop.summaries import shorten
from durable_agents.loop.tokens import estimate_text_tokens, estimate_tokens


def group_units(messages: Sequence[ChatMessage]) -> list[list[ChatMessage]]:
    """Split into units: an assistant message with tool calls plus its tool messages, or one
    message alone."""
    units: list[list[ChatMessage]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        unit = [message]
        index += 1
        if message.role == "assistant" and message.tool_calls:
            ids = {call.id for call in message.tool_calls}
            while (
                index < len(messages)
                and messages[index].role == "tool"
                and messages[index].tool_call_id in ids
            ):
                unit.append(messages[index])
                index += 1
        units.append(unit)
    return units


@dataclass(frozen=True)
class ContextFit:
    """What to send: the system message, the prompt (pinned even when `kept_from` is past it),
    a note or summary when anything was left out, and `messages[kept_from:]`.

    `dropped == 0` means nothing was left out (then everything is sent as it is).
    """

    kept_from: int
    estimated_tokens: int
    dropped: int = 0


def fit_context(
    messages: Sequence[ChatMessage],
    max_tokens: int,
    *,
    prompt_index: int = 1,
    reserve_tokens: int = 0,
    count: Callable[[ChatMessage], int] = estimate_tokens,
) -> ContextFit:
    """Keep the system message, the prompt (`messages[prompt_index]`) and the longest suffix of
    whole units that fits; earlier conversation turns sit before the prompt and go first.

    `reserve_tokens` leaves room for a summary. The most recent unit is always kept, even if it
    alone is over the budget: it holds the results the model must read next, and tool results
    are already cut to `max_observation_chars` before they get here.
    """
    pinned_tokens = count(messages[0]) + (
        count(messages[prompt_index]) if len(messages) > prompt_index else 0
    )
    units: list[tuple[int, list[ChatMessage]]] = []  # (start index, unit), oldest first
    for start, part in (
        (1, messages[1:prompt_index]),
        (prompt_index + 1, messages[prompt_index + 1 :]),
    ):
        offset = start
        for unit in group_units(part):
            units.append((offset, unit))
            offset += len(unit)
    all_tokens = pinned_tokens + sum(count(m) for _, unit in units for m in unit)
    if all_tokens <= max_tokens:
        return ContextFit(kept_from=1, estimated_tokens=all_tokens)
    budget = max_tokens - pinned_tokens - reserve_tokens - NOTE_RESERVE_TOKENS
    kept_from = len(messages)
    used = 0
    for start, unit in reversed(units):
        cost = sum(count(m) for m in unit)
        if kept_from < len(messages) and used + cost > budget:
            break
        kept_from = start
        used += cost
    dropped = sum(len(unit) for start, unit in units if start < kept_from)
    return ContextFit(kept_from=kept_from, estimated_tokens=pinned_tokens + used, dropped=dropped)


def dropped_note(count: int) -> ChatMessage:
    return ChatMessage.user(
        f"[Context note: {count} earlier messages of this task were left out to fit the context "
        "window. Ask for nothing you cannot see; use the tools again if you need data.]"
    )


def summary_note(summary: str) -> ChatMessage:
    return ChatMessage.user(f"[Summary of the earlier part of this task]\n{summary}")


NOTE_RESERVE_TOKENS = max(estimate_tokens(dropped_note(10**9)), estimate_tokens(summary_note("")))
"""Room kept for the note (or the summary's header; its text has `reserve_tokens`)."""


def context_messages(
    messages: Sequence[ChatMessage],
    fit: ContextFit,
    summary: str | None = None,
    *,
    prompt_index: int = 1,
) -> list[ChatMessage]:
    """The messages to send for `fit`: the system message, the kept earlier turns, the prompt,
    a summary or a note right after it when anything was left out, and the kept tail."""
    if fit.dropped == 0:
        return list(messages)
    middle = summary_note(summary) if summary else dropped_note(fit.dropped)
    prompt = messages[prompt_index]
    if fit.kept_from <= prompt_index:
        earlier = messages[max(fit.kept_from, 1) : prompt_index]
        return [messages[0], *earlier, prompt, middle, *messages[prompt_index + 1 :]]
    return [messages[0], prompt, middle, *messages[fit.kept_from :]]


SUMMARY_SYSTEM_PROMPT = (
    "You compress the working memory of an AI agent. Summarise the transcript below: the facts "
    "learned, tool results that still matter, decisions taken and what remains to do. Be "
    "concise and specific; keep numbers, names and file paths exactly."
)


def summary_request(
    previous: str | None, dropped: Sequence[ChatMessage], max_chars: int
) -> list[ChatMessage]:
    """Messages asking the model to fold `dropped` into the running summary."""
    lines: list[str] = []
    for message in dropped:
        if message.tool_calls:
            calls = "; ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
            lines.append(f"assistant called: {calls}")
        if message.content:
            who = "tool result" if message.role == "tool" else message.role
            lines.append(f"{who}: {message.content}")
    # The running summary is kept whole (it is bounded already); only the transcript of what
    # is being dropped is cut, from its oldest end.
    transcript = "\n".join(lines)[-max_chars * 4 :]
    earlier = f"Previous summary:\n{previous}\n\n" if previous else ""
    return [
        ChatMessage.system(SUMMARY_SYSTEM_PROMPT),
        ChatMessage.user(
            f"{earlier}Transcript:\n{transcript}\n\n"
            f"Write the summary (at most {max_chars} characters)."
        ),
    ]


def clip_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` whose estimate is at most `max_tokens`."""
    return shorten(text, max_tokens, one_line=False, marker="", size=estimate_text_tokens)
