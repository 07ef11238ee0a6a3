"""How many messages a session holds waiting for their turn.

A session answers one message at a time; the rest wait in its state, which a continue-as-new
carries as its input. Unbounded, a burst of `send`s would make that input (or the `status`
query) exceed Temporal's 2 MB payload limit and wedge the session; so the queue has limits,
checked when a message arrives.
"""

from __future__ import annotations

from collections.abc import Sequence

from durable_agents.contracts.payload_limits import TODAY
from durable_agents.contracts.session import QueuedMessage, SendMessage

MAX_QUEUED_MESSAGES = 50
"""Most messages waiting for their turn."""
MAX_QUEUED_CHARS = TODAY.queued_chars
"""Most characters of the messages waiting together (the remembered turns ride in the same
continue-as-new input, up to `memory_max_tokens`); `STORED.queued_chars` for a session that
takes large messages (its worker stores large payloads)."""


def queue_refusal(
    queued: Sequence[QueuedMessage], message: SendMessage, max_chars: int = MAX_QUEUED_CHARS
) -> str | None:
    """Why `message` cannot join the queue now (more than `max_chars` would wait), or None."""
    if len(queued) >= MAX_QUEUED_MESSAGES:
        return (
            f"{len(queued)} messages already wait for their turn; the most is "
            f"{MAX_QUEUED_MESSAGES}: wait for an answer"
        )
    waiting = sum(len(q.text) for q in queued) + len(message.text)
    if waiting > max_chars:
        return (
            f"the messages waiting would hold {waiting} characters; the most is "
            f"{max_chars}: wait for an answer"
        )
    return None
