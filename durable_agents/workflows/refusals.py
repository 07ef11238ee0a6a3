"""Bad input at a workflow boundary never leaves a workflow task retrying forever.

Every run, signal and update handler takes its payload raw (`RawValue`, or `NO_INPUT` when the
sender sent none) and reads it here, so nothing the SDK could fail to decode reaches it:

- `read_payload`: no payload, a payload over the size limit, one that does not decode, or one
  that holds a value no run can carry (`loop.input_shape`) is a `BadInput` naming the problem;
- `parse_or_refuse`: run input and update input become the model, or a non-retryable
  `ApplicationError` that names the problem (a run fails at once; an update is refused by its
  validator, so nothing enters history);
- `parse_or_ignore`: a signal that cannot be read is logged and ignored (a signal has no caller
  to answer).

More payloads than one are refused before any handler runs (`workflows.input_guard`).

How big a value may be is decided once per run and kept in its history: where its worker stores
payloads outside history, the raised limits of `contracts.payload_limits` apply
(`limits_context`, `LARGE_PAYLOADS_MARKER`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn, TypeVar

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, ValidationError

    from durable_agents.contracts.payload_limits import TODAY, limits_context_of
    from durable_agents.loop.input_shape import shape_problem
    from durable_agents.loop.validation_errors import describe_validation_error

ModelT = TypeVar("ModelT", bound=BaseModel)

NO_INPUT = RawValue(Payload())
"""The default of every handler's raw parameter: what a handler sees when the sender sent no
payload at all (`temporal workflow signal` without `--input`, the Web UI's empty dialog)."""

MAX_SIGNAL_PAYLOAD_BYTES = TODAY.signal_bytes
"""Largest signal or update payload taken (Temporal warns above this size; its hard limit is
2 MB). A start's input is bounded by its fields instead (a prompt, a history)."""


LARGE_PAYLOADS_MARKER = "large-payloads"
"""The marker of a run that takes the raised limits: its worker's choice, recorded with the
SDK's patch marker so that replay reads it from history, never from the replaying worker
(no back-compat patch: docs/versioning.md)."""


def raised_limits() -> bool:
    """Whether a value over today's limits may use the raised ones: decided once per run, at
    its first such value (asked only then, through `limits_context`: a run that never meets one
    records nothing), and kept in its history by `LARGE_PAYLOADS_MARKER`. A new run's answer
    comes from its worker (`runtime.workers.patch_activation`: yes where it stores large
    payloads outside history, `Catalog.large_payloads`); on replay the history answers, on
    any worker. Not from an update validator: it cannot record the patch."""
    return workflow.patched(LARGE_PAYLOADS_MARKER)


def limits_context() -> dict[str, Any]:
    """The validation context of what a run reads: the raised limits where `raised_limits`
    says so, else today's."""
    return limits_context_of(raised_limits)


class BadInput(ValueError):
    """A payload that cannot be read; the message names the problem."""


_REQUIRED: Any = object()


def sent_nothing(raw: Any) -> bool:
    """Whether the sender sent no payload at all (`NO_INPUT`)."""
    return isinstance(raw, RawValue) and not raw.payload.metadata and not raw.payload.data


def read_payload(
    raw: Any,
    *,
    max_bytes: int | None = MAX_SIGNAL_PAYLOAD_BYTES,
    missing: Any = _REQUIRED,
) -> Any:
    """The decoded JSON value of `raw` (a `RawValue`; anything else was decoded already, by a
    caller inside this workflow), or `BadInput`. No payload at all is `missing` where the
    input is optional, else `BadInput`."""
    if sent_nothing(raw):
        if missing is not _REQUIRED:
            return missing
        raise BadInput("no input was sent; expected a JSON object")
    if isinstance(raw, RawValue):
        payload = raw.payload
        size = payload.ByteSize()
        if max_bytes is not None and size > max_bytes:
            raise BadInput(f"the input has {size} bytes; the most is {max_bytes}")
        try:
            raw = workflow.payload_converter().from_payload(payload)
        except ValidationError as error:
            raise BadInput(
                f"the input does not decode as JSON: {describe_validation_error(error)}"
            ) from None
        except Exception as error:
            raise BadInput(f"the input does not decode: {error}") from None
    problem = shape_problem(raw)
    if problem:
        raise BadInput(problem)
    return raw


def refuse(message: str, error_type: str) -> NoReturn:
    """Fail with `message`, one non-retryable error. When called while handling another
    exception (a validation error), that one is left out: the message says it already, and
    as the failure's cause it would repeat it with a `retryable: true` of its own."""
    error = ApplicationError(message, type=error_type, non_retryable=True)
    error.__suppress_context__ = True
    raise error


def parse_or_refuse(
    model: type[ModelT],
    raw: Any,
    what: str,
    error_type: str,
    *,
    max_bytes: int | None = MAX_SIGNAL_PAYLOAD_BYTES,
    missing: Any = _REQUIRED,
    context: Mapping[str, Any] | None = None,
) -> ModelT:
    """`raw` as `model`, or a refusal: `invalid <what>: field: problem; ...`. `context` is
    the validation context (`limits_context`: the worker's size limits)."""
    try:
        value = read_payload(raw, max_bytes=max_bytes, missing=missing)
        return model.model_validate(value, context=dict(context) if context else None)
    except BadInput as error:
        refuse(f"invalid {what}: {error}", error_type)
    except ValidationError as error:
        refuse(f"invalid {what}: {describe_validation_error(error)}", error_type)


def parse_or_ignore(
    model: type[ModelT],
    raw: Any,
    signal: str,
    *,
    missing: Any = _REQUIRED,
    max_bytes: int | None = MAX_SIGNAL_PAYLOAD_BYTES,
) -> ModelT | None:
    """`raw` as `model`, or None after logging why signal `signal` is ignored."""
    try:
        return model.model_validate(read_payload(raw, missing=missing, max_bytes=max_bytes))
    except BadInput as error:
        workflow.logger.warning("signal %s ignored: invalid input: %s", signal, error)
    except ValidationError as error:
        workflow.logger.warning(
            "signal %s ignored: invalid input: %s", signal, describe_validation_error(error)
        )
    return None
