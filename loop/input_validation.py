"""Validate raw workflow input (CLI JSON) into `AgentInput`, naming every bad field."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from contracts.agent_input import AgentInput


class InvalidAgentInput(ValueError):
    """The workflow input cannot be used; the message names each bad field."""


def describe_validation_error(error: ValidationError) -> str:
    """One line per problem: `field.path: message` (the root is called `input`)."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "input"
        lines.append(f"{where}: {problem['msg']}")
    return "; ".join(lines)


def validate_agent_input(raw: Any, known_tools: Iterable[str]) -> AgentInput:
    """Parse `raw` (a dict from JSON, or an `AgentInput`) and check tool names exist.

    Raises `InvalidAgentInput` with a message such as
    `invalid AgentWorkflow input: max_iterations: Input should be greater than or equal to 1`.
    """
    if isinstance(raw, AgentInput):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        raise InvalidAgentInput(
            f"invalid AgentWorkflow input: expected a JSON object such as "
            f'{{"prompt": "..."}}, got {type(raw).__name__}'
        )
    try:
        params = AgentInput.model_validate(raw)
    except ValidationError as error:
        raise InvalidAgentInput(
            f"invalid AgentWorkflow input: {describe_validation_error(error)}"
        ) from None
    if params.tools is not None:
        known = list(known_tools)
        unknown = [name for name in params.tools if name not in known]
        if unknown:
            raise InvalidAgentInput(
                f"invalid AgentWorkflow input: tools: unknown tool(s) {', '.join(unknown)}; "
                f"available: {', '.join(known) or 'none'}"
            )
    return params
