"""Worker-side cache of each run's conversation, so model activities carry only new messages.

The cache is an optimisation, never the source of truth: the workflow's history holds every
message (in the activities that produced them and in the deltas), and on a miss the workflow
resends the whole conversation. Bounded by conversations and characters, least recently used
first out.
"""

from __future__ import annotations

from collections import OrderedDict

from contracts.messages import ChatMessage
from contracts.model_io import ContextDelta
from loop.context_window import ContextFit, context_messages


def _chars(messages: list[ChatMessage]) -> int:
    return sum(len(m.content or "") + sum(len(c.arguments) for c in m.tool_calls) for m in messages)


class ContextCache:
    """Conversations by key (`workflow id/run id`), least recently used evicted first."""

    def __init__(self, max_conversations: int = 500, max_chars: int = 200_000_000) -> None:
        self._entries: OrderedDict[str, list[ChatMessage]] = OrderedDict()
        self._chars: dict[str, int] = {}
        self._max_conversations = max_conversations
        self._max_chars = max_chars
        self.misses = 0

    def resolve(self, delta: ContextDelta) -> list[ChatMessage] | None:
        """The messages to send for `delta`, or None when this worker does not hold what the
        delta builds on (a miss)."""
        cached = self._entries.get(delta.key)
        new = delta.new_messages
        if delta.base_length == 0:
            full = list(new)
        elif cached is not None and len(cached) == delta.base_length:
            full = [*cached, *new]
        elif (
            cached is not None
            and len(cached) == delta.base_length + len(new)
            and cached[delta.base_length :] == new
        ):
            full = cached  # a retry of a call whose delta was already applied
        else:
            self.misses += 1
            return None
        self._store(delta.key, full)
        fit = ContextFit(kept_from=delta.kept_from, estimated_tokens=0, dropped=delta.dropped)
        sent = context_messages(full, fit, delta.summary, prompt_index=delta.prompt_index)
        return [*sent, *delta.extra]

    def _store(self, key: str, messages: list[ChatMessage]) -> None:
        self._entries[key] = messages
        self._entries.move_to_end(key)
        self._chars[key] = _chars(messages)
        while len(self._entries) > self._max_conversations or (
            len(self._entries) > 1 and sum(self._chars.values()) > self._max_chars
        ):
            oldest, _ = self._entries.popitem(last=False)
            self._chars.pop(oldest, None)

    def __len__(self) -> int:
        return len(self._entries)
