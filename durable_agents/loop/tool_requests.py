"""Turn the tool calls of a model reply into requests the engine can run (n8n's
createEngineRequests), or into observations when a call cannot run at all."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ValidationError

from durable_agents.contracts.messages import ToolCall
from durable_agents.loop.validation_errors import describe_validation_error


@dataclass(frozen=True)
class ToolRequest:
    """A call with validated arguments, ready to run as the tool's activity."""

    call: ToolCall
    args: dict[str, Any]


@dataclass(frozen=True)
class RefusedCall:
    """A call that cannot run; `observation` tells the model why so it can correct itself."""

    call: ToolCall
    observation: str


PlannedCall = ToolRequest | RefusedCall


ArgsSchema = type[BaseModel] | Mapping[str, Any]
"""What a tool's arguments must match: a local tool's pydantic model, or the JSON Schema an
outside (MCP) server gave."""


def validate_args(
    schema: ArgsSchema, data: dict[str, Any], context: Mapping[str, Any] | None = None
) -> dict[str, Any] | str:
    """`data` validated (as JSON data), or why it is not valid (one line). `context` is a
    pydantic model's validation context (the worker's size limits, `contracts.payload_limits`)."""
    if isinstance(schema, Mapping):
        errors = sorted(
            Draft202012Validator(dict(schema)).iter_errors(data), key=lambda e: list(e.path)
        )
        if not errors:
            return data
        return "; ".join(
            f"{'.'.join(str(p) for p in e.absolute_path) or 'input'}: {e.message}"
            for e in errors[:10]
        )
    try:
        validated = schema.model_validate(data, context=dict(context) if context else None)
        return validated.model_dump(mode="json")
    except ValidationError as error:
        return describe_validation_error(error)


def parse_arguments(
    raw: str, args_model: ArgsSchema, context: Mapping[str, Any] | None = None
) -> dict[str, Any] | str:
    """Validate the model's raw argument text: the arguments as JSON data, or an error text."""
    text = raw.strip() or "{}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return f"the arguments are not valid JSON ({error.msg} at position {error.pos})"
    if not isinstance(data, dict):
        return f"the arguments must be a JSON object, got {type(data).__name__}"
    validated = validate_args(args_model, data, context)
    return validated if isinstance(validated, dict) else f"invalid arguments: {validated}"


def plan_tool_calls(
    calls: Sequence[ToolCall],
    arg_models: Mapping[str, ArgsSchema],
    context: Mapping[str, Any] | None = None,
) -> list[PlannedCall]:
    """One planned call per tool call, in the model's order.

    `arg_models` maps each tool the run may use to its argument model. A name outside it (a
    hallucinated or disallowed tool) and arguments that fail to parse or validate become
    `RefusedCall`s whose observation lists what is possible. `context`: see `validate_args`.
    """
    planned: list[PlannedCall] = []
    for call in calls:
        args_model = arg_models.get(call.name)
        if args_model is None:
            available = ", ".join(arg_models) or "none"
            planned.append(
                RefusedCall(
                    call,
                    f"Error: unknown tool {call.name!r}. Available tools: {available}.",
                )
            )
            continue
        parsed = parse_arguments(call.arguments, args_model, context)
        if isinstance(parsed, str):
            planned.append(RefusedCall(call, f"Error: tool {call.name!r}: {parsed}"))
        else:
            planned.append(ToolRequest(call, parsed))
    return planned
