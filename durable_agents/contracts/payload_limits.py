"""How big a run's texts may be: today's limits, and the raised ones of a worker that stores
large payloads outside history (`AGENT_PAYLOAD_STORE`, runtime/payload_store.py).

Temporal refuses payloads over 2 MB, so without a store a prompt, a session message and a tool
result are capped well under that (`TODAY`). With a store every payload over 256 KiB leaves
history for the store and history keeps a reference, so a 5 MB document can reach the model
call whole (`STORED`); the context window (`max_context_tokens`) still decides what the model
is sent.

The fields of the contracts declare the raised limits, and check today's in their validators
unless the validation context says the raised ones apply (`PAYLOAD_STORE`): a value that is
only built (a session's turn input, a sub-agent's) is never refused for its size; the workflow
decides when it reads its input (`workflows.refusals.limits_context`), and clients that know
their store say so (`limits_context_of`). Today's refusals keep their words, with a hint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import ValidationInfo
from pydantic_core import PydanticCustomError

PAYLOAD_STORE = "payload_store"
"""Validation context key: whether the raised limits apply. A bool, or a callable answering
it, asked only when a value is over today's limit (so a workflow asks its patch only then).
Absent: the raised limits (the fields' own bounds)."""

ValueT = TypeVar("ValueT")


@dataclass(frozen=True)
class PayloadLimits:
    """The most a run may carry in one of its texts."""

    text_chars: int
    """A prompt, a session message, a tool result (`max_observation_chars`, read_file)."""
    context_tokens: int
    """`max_context_tokens`: the most a model call may be sent (about 4 characters a token)."""
    history_chars: int
    """A run's earlier conversation (`AgentInput.history`, a session's remembered turns)."""
    queued_chars: int
    """The messages waiting together for their turn in a session."""
    signal_bytes: int
    """A session message's signal or update payload."""


TODAY = PayloadLimits(
    text_chars=200_000,
    context_tokens=300_000,  # a full model request (about 4 bytes a token) under 2 MB
    history_chars=1_000_000,
    queued_chars=300_000,
    signal_bytes=256 * 1024,  # Temporal warns above it; its hard limit is 2 MB
)
"""Without a payload store: every payload stays in history, under Temporal's 2 MB."""

STORED = PayloadLimits(
    text_chars=8_000_000,  # 8 MB of ASCII, about 2M tokens: a 5 MB document fits
    context_tokens=2_000_000,
    history_chars=40_000_000,
    queued_chars=16_000_000,
    signal_bytes=64 * 1024 * 1024,  # 8M characters, JSON-escaped, fit
)
"""With a payload store: a payload over 256 KiB is stored, history keeps its reference."""


def limits(stored: bool) -> PayloadLimits:
    """The limits of a worker (or client) with a payload store (`stored`) or without."""
    return STORED if stored else TODAY


def limits_context_of(stored: bool | Callable[[], bool]) -> dict[str, Any]:
    """The validation context that applies the raised limits when `stored` (or what it
    answers) is true, and today's otherwise."""
    return {PAYLOAD_STORE: stored}


def raised_limits_apply(info: ValidationInfo) -> bool:
    """Whether the raised limits apply in this validation (see `PAYLOAD_STORE`)."""
    context = info.context
    if not isinstance(context, dict) or PAYLOAD_STORE not in context:
        return True
    answer = context[PAYLOAD_STORE]
    return bool(answer() if callable(answer) else answer)


NO_STORE_HINT = " without a payload store (AGENT_PAYLOAD_STORE allows up to {stored})"


_ERRORS = {
    "chars": (
        "string_too_long",
        "String should have at most {max_length} characters",
        "max_length",
    ),
    "number": ("less_than_equal", "Input should be less than or equal to {le}", "le"),
}
"""pydantic's own error for a string too long and a number too big, which today's refusals
keep (with `NO_STORE_HINT` after them)."""


def within(
    value: ValueT,
    size: int,
    today: int,
    stored: int,
    info: ValidationInfo,
    kind: Literal["chars", "number"] = "number",
) -> ValueT:
    """`value` (of `size`: characters, or the number itself) unless it is over `today` and the
    raised limits do not apply: then pydantic's own error for it, with a hint."""
    if size <= today or raised_limits_apply(info):
        return value
    error_type, message, bound = _ERRORS[kind]
    raise PydanticCustomError(error_type, message + NO_STORE_HINT, {bound: today, "stored": stored})
