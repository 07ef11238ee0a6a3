"""Conversation memory of a session: which earlier turns the next turn sees, and how.

As n8n does, a turn's question and answer are remembered once it has a final answer, optionally
with a compact note of the tools it used. A turn that ended without one (it stopped at a limit,
or failed) is remembered as the question and a note saying the request did not complete and
why, never as if the assistant had answered with its stop text ("Max iterations (10)
reached...") or an error: the user may refer back to it ("try that again"), and the model must
not take the stop text for something it said.
"""

from __future__ import annotations

from collections.abc import Sequence

from durable_agents.contracts.agent_input import AgentSettings
from durable_agents.contracts.agent_result import ToolStep
from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.session import MemoryMode, MemoryTurn, TurnReport
from durable_agents.loop.limits import max_iterations_message
from durable_agents.loop.summaries import shorten, tool_call_summary
from durable_agents.loop.tokens import estimate_messages_tokens

ERROR_CHARS = 300


def incomplete_reason(report: TurnReport, settings: AgentSettings) -> str | None:
    """Why the turn ended without an answer, or None when it has one.

    A run stopped at `max_iterations` with `on_max_iterations: final_answer` has an answer when
    the model gave one (its best answer, asked for without tools), not the stop text.
    """
    if report.error is not None:
        return f"it failed: {shorten(report.error, ERROR_CHARS)}"
    reason = report.stop_reason
    if reason is not None and reason.answered:
        return None
    if (
        reason == "max_iterations"
        and settings.on_max_iterations == "final_answer"
        and report.answer.strip()
        and report.answer != max_iterations_message(settings.max_iterations)
    ):
        return None
    if reason is None:
        return "it ended without an answer"
    return reason.incomplete_note


def incomplete_note(reason: str) -> str:
    """What the next turns see in place of an answer."""
    return f"[note: the previous request did not complete: {reason}. It has no answer.]"


def tools_note(steps: Sequence[ToolStep], max_chars: int = 400) -> str | None:
    """`[tools used: calculator {"expression": "17*25"} -> 425; ...]`, or None."""
    if not steps:
        return None
    parts = [
        f"{s.tool} {tool_call_summary(s.args or {})} -> {shorten(s.observation, 60)}" for s in steps
    ]
    return shorten(f"[tools used: {'; '.join(parts)}]", max_chars)


def memory_turn(
    turn: int,
    user: str,
    answer: str,
    steps: Sequence[ToolStep],
    mode: MemoryMode,
    incomplete: str | None = None,
) -> MemoryTurn:
    """The turn as memory keeps it; with `incomplete` (its reason) its `answer` is not kept."""
    note = tools_note(steps) if mode == "answers_and_tools" else None
    return MemoryTurn(
        turn=turn,
        user=user,
        answer="" if incomplete is not None else answer,
        tools_note=note,
        incomplete=incomplete,
    )


def turn_tokens(turn: MemoryTurn) -> int:
    """The estimated tokens of the messages the turn becomes."""
    return estimate_messages_tokens(memory_messages([turn]))


MEMORY_TRIM_STEPS = 4
"""Over `max_turns`, a quarter of them goes at once (`remember`)."""


def remember(
    memory: Sequence[MemoryTurn],
    turn: MemoryTurn,
    *,
    max_turns: int,
    max_tokens: int | None,
) -> list[MemoryTurn]:
    """Add `turn`, then keep the most recent turns within `max_turns` and `max_tokens`.

    Over `max_turns`, the oldest quarter of them goes at once (20: down to 16), not one turn
    per turn: the remembered turns open every prompt of the next turn, and a provider's prompt
    cache serves a prompt only up to its first change, so a window that slid by one turn each
    turn would make the whole memory be read again on every turn.
    """
    kept = [*memory, turn]
    if len(kept) > max_turns:
        kept = kept[max(len(kept) - max_turns, max_turns // MEMORY_TRIM_STEPS) :]
    if max_tokens is not None:
        while kept and sum(turn_tokens(t) for t in kept) > max_tokens:
            kept = kept[1:]
    return kept


def memory_messages(memory: Sequence[MemoryTurn]) -> list[ChatMessage]:
    """The remembered turns as user/assistant messages for `AgentInput.history`.

    A turn without an answer keeps its place in the alternation (some chat templates refuse two
    user messages in a row) with the note that it did not complete.
    """
    messages: list[ChatMessage] = []
    for turn in memory:
        said = incomplete_note(turn.incomplete) if turn.incomplete is not None else turn.answer
        content = f"{turn.tools_note}\n{said}" if turn.tools_note else said
        messages += [ChatMessage.user(turn.user), ChatMessage(role="assistant", content=content)]
    return messages


def last_answer(memory: Sequence[MemoryTurn]) -> str | None:
    """The most recent remembered answer (turns that did not complete have none)."""
    return next((t.answer for t in reversed(memory) if t.incomplete is None), None)
