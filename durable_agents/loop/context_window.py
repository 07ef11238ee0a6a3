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

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from durable_agents.contracts.messages import ChatMessage
from durable_agents.loop.summaries import shorten
from durable_agents.loop.tokens import TokenTally, estimate_text_tokens, estimate_tokens


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


TRIM_STEPS = 4
"""When the window is full, the kept part moves forward by about a quarter of the room at once
(`fit_context`), not by one message per call."""


def fit_context(
    messages: Sequence[ChatMessage],
    max_tokens: int,
    *,
    prompt_index: int = 1,
    reserve_tokens: int = 0,
    count: Callable[[ChatMessage], int] = estimate_tokens,
    tally: TokenTally | None = None,
) -> ContextFit:
    """Keep the system message, the prompt (`messages[prompt_index]`) and a suffix of whole
    units that fits; earlier conversation turns sit before the prompt and go first.

    The suffix starts at a block boundary: the first unit at or after a multiple of a quarter
    of the room (`TRIM_STEPS`), counted from the start of the conversation. A provider's prompt
    cache serves what a request shares with the previous one from its start, so the start of
    what is sent must stay put: cut at the fewest units that fit, the suffix would move (and
    the cache miss everything after the prompt) at every call once the window is full; cut at
    a boundary, it moves once per quarter of the window.

    `reserve_tokens` leaves room for a summary. The most recent unit is always kept, even if it
    alone is over the budget: it holds the results the model must read next, and tool results
    are already cut to `max_observation_chars` before they get here. `tally` (the run's
    `TokenTally`) keeps the estimates between calls; without one they are made afresh.
    """
    tally = tally if tally is not None else TokenTally(count)
    totals = tally.totals(messages)
    size = len(messages)
    prompt = totals[prompt_index + 1] - totals[prompt_index] if size > prompt_index else 0
    pinned_tokens = totals[min(size, 1)] + prompt
    if totals[size] <= max_tokens:
        return ContextFit(kept_from=1, estimated_tokens=totals[size])
    budget = max_tokens - pinned_tokens - reserve_tokens - NOTE_RESERVE_TOKENS
    kept_from = _Cuts(tally, messages, prompt_index).kept_from(totals, budget, prompt)
    kept = totals[size] - totals[kept_from] - (prompt if kept_from <= prompt_index < size else 0)
    dropped = kept_from - 1 - (1 if prompt_index < min(kept_from, size) else 0)
    return ContextFit(
        kept_from=kept_from, estimated_tokens=pinned_tokens + kept, dropped=max(dropped, 0)
    )


@dataclass(frozen=True)
class _Cuts:
    """Where the kept suffix may start: a unit's first message, in the earlier turns
    (`[1, prompt_index)`) or after the prompt; never the prompt itself."""

    tally: TokenTally
    messages: Sequence[ChatMessage]
    prompt_index: int

    def next(self, at_least: int) -> int | None:
        """The first place at or after `at_least`, or None."""
        size, prompt_index = len(self.messages), self.prompt_index
        if prompt_index > 1 and at_least <= 1 < size:
            return 1
        start = self.tally.first_start(self.messages, max(at_least, 1))
        if start == prompt_index:
            start = self.tally.first_start(self.messages, prompt_index + 1)
        after_prompt = prompt_index + 1
        if at_least <= after_prompt < size and (start is None or start > after_prompt):
            return after_prompt
        return start

    def last(self) -> int | None:
        """The last place: the most recent unit's first message."""
        starts = self.tally.starts(self.messages)
        candidates = [s for s in starts[-2:] if s != self.prompt_index]
        if self.prompt_index + 1 < len(self.messages):
            candidates.append(self.prompt_index + 1)
        if self.prompt_index > 1:
            candidates.append(1)
        return max(candidates, default=None)

    def kept_from(self, totals: Sequence[int], budget: int, prompt: int) -> int:
        """The first block boundary at or after the first place whose suffix fits (that place
        itself when no boundary comes before the most recent unit); the most recent unit when
        nothing fits."""
        last = self.last()
        fitting = self.first_fitting(totals, budget, prompt)
        if fitting is None:
            return len(self.messages) if last is None else last
        step = max(1, budget // TRIM_STEPS)
        boundary = self.next(bisect_left(totals, -(-totals[fitting] // step) * step, fitting))
        return (
            boundary if boundary is not None and last is not None and boundary <= last else fitting
        )

    def first_fitting(self, totals: Sequence[int], budget: int, prompt: int) -> int | None:
        """The first place whose suffix (the prompt aside) is within `budget`, or None."""
        size, prompt_index = len(self.messages), self.prompt_index
        if 1 < prompt_index < size:  # earlier turns: the suffix holds the prompt too
            index = bisect_left(totals, totals[size] - budget - prompt, 1, prompt_index)
            cut = self.next(index)
            if cut is not None and cut < prompt_index:
                return cut
        index = bisect_left(totals, totals[size] - budget, prompt_index + 1, size)
        cut = self.next(max(index, prompt_index + 1))
        return cut if cut is not None and totals[size] - totals[cut] <= budget else None


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
