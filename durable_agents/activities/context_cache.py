"""Worker-side cache of each run's conversation, so model activities carry only new messages.

The cache is an optimisation, never the source of truth: the workflow's history holds every
message (in the activities that produced them and in the deltas), and on a miss the workflow
resends the whole conversation. A delta says what it builds on and the digest of what it makes
(`ContextDelta`); the cache sends the model that conversation or answers a miss, so a stale
entry (another worker ran later calls, a call failed midway, the run was reset) can cost a
resend but never a wrong conversation. Bounded by conversations and characters, least recently
used first out.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from durable_agents.activities.kept_outputs import KeptOutputs
from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import ContextDelta, ToolSchema
from durable_agents.loop.context_reuse import (
    apply_pieces,
    conversation_digest,
    message_digest,
    tools_digest,
)
from durable_agents.loop.context_window import ContextFit, context_messages


def _chars(messages: list[ChatMessage]) -> int:
    return sum(len(m.content or "") + sum(len(c.arguments) for c in m.tool_calls) for m in messages)


@dataclass(frozen=True)
class Resolved:
    """What a model call sends: the laid-out messages and the tools offered."""

    messages: list[ChatMessage]
    tools: list[ToolSchema]


@dataclass
class Entry:
    """One conversation: its messages with their digests, and the tools sent with it."""

    messages: list[ChatMessage]
    digests: list[str]
    tools: list[ToolSchema] = field(default_factory=list)
    tools_digest: str = ""

    @property
    def digest(self) -> str:
        return conversation_digest(self.digests)


class ContextCache:
    """Conversations by key (`workflow id/first run id`), least recently used evicted first."""

    def __init__(self, max_conversations: int = 500, max_chars: int = 200_000_000) -> None:
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._chars: dict[str, int] = {}
        self._max_conversations = max_conversations
        self._max_chars = max_chars
        self.misses = 0
        self.outputs = KeptOutputs()
        """The tool outputs this worker keeps for the next model calls (`ContextDelta.kept`)."""

    def resolve(
        self, delta: ContextDelta, tools: list[ToolSchema] | None = None
    ) -> Resolved | None:
        """The messages (and tools) to send for `delta`, or None when this worker does not hold
        what the delta builds on (a miss), or one of the tool outputs it names (unless it is a
        retry of a call this worker applied: the outputs are in the conversation by then)."""
        filled = self.outputs.fill(delta.new_messages, delta.kept) if delta.kept else None
        if filled is not None:
            delta = delta.model_copy(update={"new_messages": filled})
        entry = self._entry(delta, tools or [])
        if entry is None:
            self.misses += 1
            return None
        self._store(delta.key, entry)
        fit = ContextFit(kept_from=delta.kept_from, estimated_tokens=0, dropped=delta.dropped)
        sent = context_messages(entry.messages, fit, delta.summary, prompt_index=delta.prompt_index)
        return Resolved([*sent, *delta.extra], entry.tools)

    def _entry(self, delta: ContextDelta, tools: list[ToolSchema]) -> Entry | None:
        """The conversation `delta` makes, if this worker holds what it builds on."""
        cached = self._entries.get(delta.key)
        if delta.held is None:
            appended = _legacy(cached, delta)
            return None if appended is None else Entry(appended, [], tools)
        if cached is not None and cached.digest == delta.result_digest:
            made: Entry | None = cached  # a retry of a call this worker applied already
        else:
            made = _build(cached, delta)
        if made is None or made.digest != delta.result_digest:
            return None
        entry = made
        if not delta.tools_cached:
            return Entry(entry.messages, entry.digests, tools, tools_digest(tools))
        if cached is None or cached.tools_digest != delta.tools_digest:
            return None
        return Entry(entry.messages, entry.digests, cached.tools, cached.tools_digest)

    def _store(self, key: str, entry: Entry) -> None:
        self._entries[key] = entry
        self._entries.move_to_end(key)
        self._chars[key] = _chars(entry.messages)
        while len(self._entries) > self._max_conversations or (
            len(self._entries) > 1 and sum(self._chars.values()) > self._max_chars
        ):
            oldest, _ = self._entries.popitem(last=False)
            self._chars.pop(oldest, None)

    def clear(self) -> None:
        """Forget every conversation (what the cache of a restarted worker holds)."""
        self._entries.clear()
        self._chars.clear()

    def __len__(self) -> int:
        return len(self._entries)


def _build(cached: Entry | None, delta: ContextDelta) -> Entry | None:
    """Apply `delta` to the `held` messages of `cached` (none: a whole conversation)."""
    new = delta.new_messages
    new_digests = [message_digest(m) for m in new]
    if delta.held == 0 and delta.reuse is None:
        return Entry(list(new), new_digests)
    if cached is None or len(cached.messages) != delta.held:
        return None
    if delta.reuse is None:
        return Entry([*cached.messages, *new], [*cached.digests, *new_digests])
    messages = apply_pieces(cached.messages, delta.reuse, new)
    digests = apply_pieces(cached.digests, delta.reuse, new_digests)
    if messages is None or digests is None:
        return None
    return Entry(messages, digests)


def _legacy(cached: Entry | None, delta: ContextDelta) -> list[ChatMessage] | None:
    """A delta from a workflow that predates `held` (a run still in flight): `base_length`
    cached messages and the new ones appended; a retry finds them appended already."""
    new = delta.new_messages
    if delta.base_length == 0:
        return list(new)
    if cached is None:
        return None
    held = cached.messages
    if len(held) == delta.base_length:
        return [*held, *new]
    if len(held) == delta.base_length + len(new) and held[delta.base_length :] == new:
        return held
    return None
