"""Refusing bad input at a workflow boundary: a non-retryable `ApplicationError` that names
the problem, so it fails the run (input) or the update (validator) instead of a workflow task
that would retry forever."""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, ValidationError

    from loop.input_validation import describe_validation_error

ModelT = TypeVar("ModelT", bound=BaseModel)


def refuse(message: str, error_type: str) -> NoReturn:
    raise ApplicationError(message, type=error_type, non_retryable=True)


def parse_or_refuse(model: type[ModelT], raw: Any, what: str, error_type: str) -> ModelT:
    """`raw` as `model`, or a refusal: `invalid <what>: field: problem; ...`."""
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        refuse(f"invalid {what}: {describe_validation_error(error)}", error_type)
