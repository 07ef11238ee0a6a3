"""Bad input at a workflow boundary never leaves a workflow task retrying forever: run input
and update input are refused with a non-retryable `ApplicationError` that names the problem;
a signal that cannot be read is logged and ignored (a signal has no caller to answer)."""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, ValidationError

    from loop.validation_errors import describe_validation_error

ModelT = TypeVar("ModelT", bound=BaseModel)


def refuse(message: str, error_type: str) -> NoReturn:
    raise ApplicationError(message, type=error_type, non_retryable=True)


def parse_or_refuse(model: type[ModelT], raw: Any, what: str, error_type: str) -> ModelT:
    """`raw` as `model`, or a refusal: `invalid <what>: field: problem; ...`."""
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        refuse(f"invalid {what}: {describe_validation_error(error)}", error_type)


def parse_or_ignore(model: type[ModelT], raw: Any, signal: str) -> ModelT | None:
    """`raw` as `model`, or None after logging why signal `signal` is ignored."""
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        workflow.logger.warning(
            "signal %s ignored: invalid input: %s", signal, describe_validation_error(error)
        )
        return None
