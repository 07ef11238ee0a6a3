"""Fit the messages sent to the model into its context window.

The system message and the original prompt always stay; the most recent messages stay; older
ones are dropped (or, with the `summarize` strategy, replaced by a summary the workflow asks the
model for). An assistant message with tool calls and the tool messages that answer it form one
unit that is kept or dropped whole: providers reject a tool call without its result and a
result without its call.

Token counts are a deterministic estimate, not a tokenizer: this runs inside the workflow, where
every worker must reach the same decision on replay, and a tokenizer's data files (tiktoken
loads or downloads them) would make the decision depend on the machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contracts.messages import ChatMessage

MESSAGE_OVERHEAD_TOKENS = 4
NOTE_RESERVE_TOKENS = 40


def estimate_text_tokens(text: str) -> int:
    """About 4 ASCII characters per token, 1 token per other character (CJK, emoji, ...)."""
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)


def estimate_tokens(message: ChatMessage) -> int:
    """Estimated tokens of one message, tool calls and reasoning included."""
    total = MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(message.content or "")
    for call in message.tool_calls:
        total += MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(call.name + call.arguments)
    if message.reasoning_content:
        total += estimate_text_tokens(message.reasoning_content)
    return total


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
    """Send `messages[:2]`, then (if `kept_from > 2`) a note or summary, then
    `messages[kept_from:]`."""

    kept_from: int
    estimated_tokens: int

    @property
    def dropped(self) -> int:
        return self.kept_from - 2


def fit_context(
    messages: Sequence[ChatMessage],
    max_tokens: int,
    *,
    reserve_tokens: int = 0,
    count: Callable[[ChatMessage], int] = estimate_tokens,
) -> ContextFit:
    """Keep the head (system + prompt) and the longest suffix of whole units that fits.

    `reserve_tokens` leaves room for a summary. The most recent unit is always kept, even if it
    alone is over the budget: it holds the results the model must read next, and tool results
    are already cut to `max_observation_chars` before they get here.
    """
    head = list(messages[:2])
    body_units = group_units(messages[2:])
    head_tokens = sum(count(m) for m in head)
    all_tokens = head_tokens + sum(count(m) for unit in body_units for m in unit)
    if all_tokens <= max_tokens:
        return ContextFit(kept_from=min(2, len(messages)), estimated_tokens=all_tokens)
    budget = max_tokens - head_tokens - reserve_tokens - NOTE_RESERVE_TOKENS
    kept_count = 0
    used = 0
    for unit in reversed(body_units):
        cost = sum(count(m) for m in unit)
        if kept_count and used + cost > budget:
            break
        kept_count += len(unit)
        used += cost
    return ContextFit(kept_from=len(messages) - kept_count, estimated_tokens=head_tokens + used)


def dropped_note(count: int) -> ChatMessage:
    return ChatMessage.user(
        f"[Context note: {count} earlier messages of this task were left out to fit the context "
        "window. Ask for nothing you cannot see; use the tools again if you need data.]"
    )


def summary_note(summary: str) -> ChatMessage:
    return ChatMessage.user(f"[Summary of the earlier part of this task]\n{summary}")


def context_messages(
    messages: Sequence[ChatMessage], fit: ContextFit, summary: str | None = None
) -> list[ChatMessage]:
    """The messages to send for `fit`: head, a summary or a note if anything was left out, tail."""
    if fit.kept_from <= 2:
        return list(messages)
    middle = summary_note(summary) if summary else dropped_note(fit.dropped)
    return [*messages[:2], middle, *messages[fit.kept_from :]]


SUMMARY_SYSTEM_PROMPT = (
    "You compress the working memory of an AI agent. Summarise the transcript below: the facts "
    "learned, tool results that still matter, decisions taken and what remains to do. Be "
    "concise and specific; keep numbers, names and file paths exactly."
)


def summary_request(
    previous: str | None, dropped: Sequence[ChatMessage], max_chars: int
) -> list[ChatMessage]:
    """Messages asking the model to fold `dropped` into the running summary."""
    lines = [f"Previous summary:\n{previous}\n"] if previous else []
    for message in dropped:
        if message.tool_calls:
            calls = "; ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
            lines.append(f"assistant called: {calls}")
        if message.content:
            who = "tool result" if message.role == "tool" else message.role
            lines.append(f"{who}: {message.content}")
    transcript = "\n".join(lines)[-max_chars * 4 :]
    return [
        ChatMessage.system(SUMMARY_SYSTEM_PROMPT),
        ChatMessage.user(
            f"Transcript:\n{transcript}\n\nWrite the summary (at most {max_chars} characters)."
        ),
    ]
