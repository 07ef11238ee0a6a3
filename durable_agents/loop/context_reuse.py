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

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import ToolSchema

Piece = tuple[int, int]
"""`(start, end)`: the cached messages `[start:end]`; `(NEW, n)`: the next `n` new messages."""

NEW = -1

T = TypeVar("T")


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def message_digest(message: ChatMessage) -> str:
    """What makes two messages the same message for the model, in 16 characters. The workflow
    keeps these for what the worker's cache holds (and carries them across continue-as-new)
    instead of the messages themselves."""
    return _digest(message.model_dump_json())


def conversation_digest(message_digests: Sequence[str]) -> str:
    """A whole conversation's digest, from its messages' digests: what a delta makes, checked
    by the worker before it sends anything to the model."""
    return _digest("".join(message_digests))


def tools_digest(tools: Sequence[ToolSchema]) -> str:
    """The same for a tool list (names, descriptions, schemas, in order)."""
    return _digest(json.dumps([t.model_dump(mode="json") for t in tools], sort_keys=True))


@dataclass(frozen=True)
class Reuse:
    """A conversation as pieces of a cached one: `pieces`, the messages the cache lacks
    (`new`, in order), and the digest of every message of the conversation (`digests`)."""

    pieces: list[Piece]
    new: list[ChatMessage]
    digests: list[str]


def reuse_pieces(cached: Sequence[str], current: Sequence[ChatMessage]) -> Reuse:
    """`current` as pieces of the cached messages (given by their digests) and new messages.

    Each message is taken from the cache when an equal one is there (continuing the previous
    piece when the next cached message is the one needed), otherwise it is new."""
    where: dict[str, int] = {}
    for index, digest in enumerate(cached):
        where.setdefault(digest, index)
    pieces: list[Piece] = []
    new: list[ChatMessage] = []
    digests = [message_digest(m) for m in current]
    for message, key in zip(current, digests, strict=True):
        last = pieces[-1] if pieces else None
        if last is not None and last[0] != NEW and last[1] < len(cached) and cached[last[1]] == key:
            pieces[-1] = (last[0], last[1] + 1)
        elif key in where:
            pieces.append((where[key], where[key] + 1))
        elif last is not None and last[0] == NEW:
            pieces[-1] = (NEW, last[1] + 1)
            new.append(message)
        else:
            pieces.append((NEW, 1))
            new.append(message)
    return Reuse(pieces, new, digests)


def apply_pieces(cached: Sequence[T], pieces: Sequence[Piece], new: Sequence[T]) -> list[T] | None:
    """The conversation the pieces describe (its messages, or their digests), or None if they
    do not fit `cached` and `new`."""
    items: list[T] = []
    taken = 0
    for start, end in pieces:
        if start == NEW:
            if end < 1 or taken + end > len(new):
                return None
            items += new[taken : taken + end]
            taken += end
        elif 0 <= start < end <= len(cached):
            items += cached[start:end]
        else:
            return None
    return items if taken == len(new) else None
