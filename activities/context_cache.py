"""Worker-side cache of each run's conversation, so model activities carry only new messages.

The cache is an optimisation, never the source of truth: the workflow's history holds every
message (in the activities that produced them and in the deltas), and on a miss the workflow
resends the whole conversation. Bounded by conversations and characters, least recently used
first out.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from contracts.messages import ChatMessage
from contracts.model_io import ContextDelta, ToolSchema
from loop.context_reuse import apply_pieces, pieces_length
from loop.context_window import ContextFit, context_messages


def _chars(messages: list[ChatMessage]) -> int:
    return sum(len(m.content or "") + sum(len(c.arguments) for c in m.tool_calls) for m in messages)


@dataclass(frozen=True)
class Resolved:
    """What a model call sends: the laid-out messages and the tools offered."""

    messages: list[ChatMessage]
    tools: list[ToolSchema]


class ContextCache:
    """Conversations by key (`workflow id/run id`), least recently used evicted first.

    Each entry also holds how many deltas built it (`ContextDelta.sequence`), when the workflow
    counts them: a delta applies only to the entry it was computed against."""

    def __init__(self, max_conversations: int = 500, max_chars: int = 200_000_000) -> None:
        self._entries: OrderedDict[str, list[ChatMessage]] = OrderedDict()
        self._chars: dict[str, int] = {}
        self._sequence: dict[str, int | None] = {}
        self._tools: dict[str, list[ToolSchema]] = {}
        self._max_conversations = max_conversations
        self._max_chars = max_chars
        self.misses = 0

    def resolve(
        self, delta: ContextDelta, tools: list[ToolSchema] | None = None
    ) -> Resolved | None:
        """The messages (and tools) to send for `delta`, or None when this worker does not hold
        what the delta builds on (a miss)."""
        full = self._conversation(delta)
        held_tools = self._tools.get(delta.key) if delta.tools_cached else (tools or [])
        if full is None or held_tools is None:
            self.misses += 1
            return None
        self._store(delta.key, full, None if delta.sequence is None else delta.sequence + 1)
        self._tools[delta.key] = held_tools
        fit = ContextFit(kept_from=delta.kept_from, estimated_tokens=0, dropped=delta.dropped)
        sent = context_messages(full, fit, delta.summary, prompt_index=delta.prompt_index)
        return Resolved([*sent, *delta.extra], held_tools)

    def _conversation(self, delta: ContextDelta) -> list[ChatMessage] | None:
        """The whole conversation `delta` describes, if this worker holds what it builds on."""
        cached = self._entries.get(delta.key)
        new = delta.new_messages
        if delta.base_length == 0 and delta.reuse is None:
            return list(new)
        if cached is None:
            return None
        held = self._sequence.get(delta.key)
        if delta.sequence is not None and held == delta.sequence + 1:
            # A retry of a call whose delta this worker applied already (the model failed, or
            # the next model is tried): the entry is what the delta made.
            return cached if self._made_by(cached, delta) else None
        if held != delta.sequence:
            return None
        if len(cached) == delta.base_length:
            if delta.reuse is None:
                return [*cached, *new]
            return apply_pieces(cached, delta.reuse, new)
        if delta.sequence is None and self._made_by(cached, delta):
            return cached  # a retry (a workflow that does not count its deltas)
        return None

    @staticmethod
    def _made_by(cached: list[ChatMessage], delta: ContextDelta) -> bool:
        new = delta.new_messages
        if delta.reuse is not None:
            return len(cached) == pieces_length(delta.reuse)
        return len(cached) == delta.base_length + len(new) and cached[delta.base_length :] == new

    def _store(self, key: str, messages: list[ChatMessage], sequence: int | None) -> None:
        self._entries[key] = messages
        self._sequence[key] = sequence
        self._entries.move_to_end(key)
        self._chars[key] = _chars(messages)
        while len(self._entries) > self._max_conversations or (
            len(self._entries) > 1 and sum(self._chars.values()) > self._max_chars
        ):
            oldest, _ = self._entries.popitem(last=False)
            self._chars.pop(oldest, None)
            self._sequence.pop(oldest, None)
            self._tools.pop(oldest, None)

    def __len__(self) -> int:
        return len(self._entries)
