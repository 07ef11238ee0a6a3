"""Conversation memory of a session: which earlier turns the next turn sees, and how.

As n8n does, a turn is remembered only once it has a final answer: its question and answer,
optionally with a compact note of the tools it used.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.agent_result import ToolStep
from contracts.messages import ChatMessage
from contracts.session import MemoryMode, MemoryTurn
from loop.context_window import estimate_text_tokens
from loop.summaries import shorten, tool_call_summary


def tools_note(steps: Sequence[ToolStep], max_chars: int = 400) -> str | None:
    """`[tools used: calculator {"expression": "17*25"} -> 425; ...]`, or None."""
    if not steps:
        return None
    parts = [
        f"{s.tool} {tool_call_summary(s.args or {})} -> {shorten(s.observation, 60)}" for s in steps
    ]
    return shorten(f"[tools used: {'; '.join(parts)}]", max_chars)


def turn_tokens(turn: MemoryTurn) -> int:
    return estimate_text_tokens(turn.user + turn.answer + (turn.tools_note or ""))


def remember(
    memory: Sequence[MemoryTurn],
    turn: MemoryTurn,
    *,
    max_turns: int,
    max_tokens: int | None,
) -> list[MemoryTurn]:
    """Add `turn`, then keep the most recent turns within `max_turns` and `max_tokens`."""
    kept = [*memory, turn][-max_turns:] if max_turns else []
    if max_tokens is not None:
        while kept and sum(turn_tokens(t) for t in kept) > max_tokens:
            kept = kept[1:]
    return kept


def memory_turn(
    turn: int, user: str, answer: str, steps: Sequence[ToolStep], mode: MemoryMode
) -> MemoryTurn:
    note = tools_note(steps) if mode == "answers_and_tools" else None
    return MemoryTurn(turn=turn, user=user, answer=answer, tools_note=note)


def memory_messages(memory: Sequence[MemoryTurn]) -> list[ChatMessage]:
    """The remembered turns as user/assistant messages for `AgentInput.history`."""
    messages: list[ChatMessage] = []
    for turn in memory:
        answer = f"{turn.tools_note}\n{turn.answer}" if turn.tools_note else turn.answer
        messages += [ChatMessage.user(turn.user), ChatMessage(role="assistant", content=answer)]
    return messages
