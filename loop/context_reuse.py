"""Building a conversation out of the one a worker's context cache already holds.

Within a run the conversation only grows, so a model activity carries the messages added since
the previous call (`ContextDelta.base_length`). A session's next turn is a new conversation
that repeats most of the previous one in another order: the system prompt, the remembered
turns (the oldest may have left the window), then the new message. `reuse_pieces` writes it as
pieces of the cached list plus the messages the cache does not hold, so the turn's first model
call carries its new message, not the whole memory window again. `apply_pieces` is the worker's
side. Pure functions: no Temporal, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from contracts.messages import ChatMessage

Piece = tuple[int, int]
"""`(start, end)`: the cached messages `[start:end]`; `(NEW, n)`: the next `n` new messages."""

NEW = -1


def message_key(message: ChatMessage) -> tuple[object, ...]:
    """What makes two messages the same message for the model."""
    calls = json.dumps([c.model_dump(mode="json") for c in message.tool_calls], sort_keys=True)
    return (
        message.role,
        message.content,
        message.tool_call_id,
        message.reasoning_content,
        message.reasoning_key,
        calls if message.tool_calls else None,
    )


def reuse_pieces(
    cached: Sequence[ChatMessage], current: Sequence[ChatMessage]
) -> tuple[list[Piece], list[ChatMessage]]:
    """`current` as pieces of `cached` and new messages: (pieces, the new messages in order).

    Each message is taken from the cache when an equal one is there (continuing the previous
    piece when the next cached message is the one needed), otherwise it is new."""
    where: dict[tuple[object, ...], int] = {}
    for index, message in enumerate(cached):
        where.setdefault(message_key(message), index)
    cached_keys = [message_key(m) for m in cached]
    pieces: list[Piece] = []
    new: list[ChatMessage] = []
    for message in current:
        key = message_key(message)
        last = pieces[-1] if pieces else None
        if (
            last is not None
            and last[0] != NEW
            and last[1] < len(cached)
            and (cached_keys[last[1]] == key)
        ):
            pieces[-1] = (last[0], last[1] + 1)
        elif key in where:
            pieces.append((where[key], where[key] + 1))
        elif last is not None and last[0] == NEW:
            pieces[-1] = (NEW, last[1] + 1)
            new.append(message)
        else:
            pieces.append((NEW, 1))
            new.append(message)
    return pieces, new


def pieces_length(pieces: Sequence[Piece]) -> int:
    """How many messages the pieces make."""
    return sum(end if start == NEW else end - start for start, end in pieces)


def apply_pieces(
    cached: Sequence[ChatMessage], pieces: Sequence[Piece], new: Sequence[ChatMessage]
) -> list[ChatMessage] | None:
    """The conversation the pieces describe, or None if they do not fit `cached` and `new`."""
    messages: list[ChatMessage] = []
    taken = 0
    for start, end in pieces:
        if start == NEW:
            if end < 1 or taken + end > len(new):
                return None
            messages += new[taken : taken + end]
            taken += end
        elif 0 <= start < end <= len(cached):
            messages += cached[start:end]
        else:
            return None
    return messages if taken == len(new) else None
