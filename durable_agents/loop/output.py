"""Typed answers (structured output): the schema a run's answer must match, how the model gives
it, and what an invalid answer gets (seed 000's output parser, with its retry).

Two ways to ask for it:
- `tool` (portable, any tool-calling model): the model is offered a `final_result` tool whose
  arguments are the output schema, as Pydantic AI's tool output does. A plain-text answer that is
  valid JSON for the schema is accepted too.
- `native`: the provider's `response_format` (`json_schema`, strict); the answer text is JSON.

An invalid answer (not JSON, or JSON that fails the schema) goes back to the model with the
validation errors, at most `output_retries` times; then the run stops with `invalid_output`.
Validation is pure (jsonschema, or the registered pydantic model), so it replays identically.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ValidationError

from durable_agents.contracts.agent_input import AgentSettings
from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import ModelReply, ToolSchema
from durable_agents.contracts.scratchpad import Scratchpad
from durable_agents.loop.stop import Outcome
from durable_agents.loop.summaries import shorten

FINAL_RESULT_TOOL = "final_result"
WRAPPED_KEY = "result"
"""A schema that is not an object is offered as `{"result": <schema>}` (tool arguments must be
an object)."""
MAX_ERRORS = 10
STOP_TOOLS_REPLACED_BY_OUTPUT = ("final_answer",)
"""Tools that end a run with free text: left out when the run must end with a typed answer."""


@dataclass(frozen=True)
class OutputSpec:
    """What the run's answer must be: its JSON Schema, how the model is asked for it, and how
    many invalid answers it may give before the run stops."""

    schema: dict[str, Any]
    mode: Literal["tool", "native"]
    retries: int
    model: type[BaseModel] | None = None
    """With `output_type`: the registered pydantic model, which validates (and normalises)."""
    name: str = "output"

    @property
    def wrapped(self) -> bool:
        return self.schema.get("type") != "object"

    def validate(self, value: Any) -> tuple[Any, list[str]]:
        """The validated value, or the reasons it is not valid (one line each)."""
        if self.model is not None:
            try:
                return self.model.model_validate(value).model_dump(mode="json"), []
            except ValidationError as error:
                return None, [
                    f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                    for e in error.errors()[:MAX_ERRORS]
                ]
        errors = sorted(
            Draft202012Validator(self.schema).iter_errors(value), key=lambda e: list(e.path)
        )
        return (value, []) if not errors else (None, [describe(e) for e in errors[:MAX_ERRORS]])


def describe(error: Any) -> str:
    where = "/".join(str(part) for part in error.absolute_path) or "(root)"
    return f"{where}: {error.message}"


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why `schema` is not a usable JSON Schema, or None."""
    try:
        Draft202012Validator.check_schema(dict(schema))
    except SchemaError as error:
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{error.message}" + (f" (at {where})" if where else "")
    return None


def output_spec(
    params: AgentSettings, output_types: Mapping[str, type[BaseModel]]
) -> OutputSpec | None:
    """The run's output spec (None without `output_schema` / `output_type`). Input validation
    has already checked that the schema is valid and the type is registered."""
    if params.output_type is not None:
        model = output_types[params.output_type]
        schema = model.model_json_schema()
        return OutputSpec(
            schema, params.structured_output, params.output_retries, model, params.output_type
        )
    if params.output_schema is not None:
        return OutputSpec(params.output_schema, params.structured_output, params.output_retries)
    return None


def final_result_tool(spec: OutputSpec) -> ToolSchema:
    """The tool the model calls to give its final answer (in `tool` mode)."""
    parameters = (
        {"type": "object", "properties": {WRAPPED_KEY: spec.schema}, "required": [WRAPPED_KEY]}
        if spec.wrapped
        else spec.schema
    )
    return ToolSchema(
        name=FINAL_RESULT_TOOL,
        description="Give the final answer. Call this once you have everything the answer "
        "needs; its arguments are the answer.",
        parameters=parameters,
    )


def response_format(spec: OutputSpec) -> dict[str, Any]:
    """The provider's structured-output request (in `native` mode)."""
    return {
        "type": "json_schema",
        "json_schema": {"name": spec.name, "schema": spec.schema, "strict": True},
    }


def render_output(value: Any) -> str:
    """The answer's text rendering of a validated output."""
    return json.dumps(value, ensure_ascii=False)


def parse_text(spec: OutputSpec, text: str) -> tuple[Any, list[str]]:
    """An answer given as text: JSON (optionally fenced as a Markdown code block), validated."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body[body.find("\n") + 1 :] if "\n" in body else body
    try:
        value = json.loads(body)
    except json.JSONDecodeError as error:
        return None, [f"the answer is not valid JSON ({error.msg} at position {error.pos})"]
    return spec.validate(value)


def parse_final_result(spec: OutputSpec, arguments: str) -> tuple[Any, list[str]]:
    """The arguments of a `final_result` call, validated (unwrapped when the schema was)."""
    try:
        value = json.loads(arguments.strip() or "{}")
    except json.JSONDecodeError as error:
        return None, [f"the arguments are not valid JSON ({error.msg} at position {error.pos})"]
    if spec.wrapped:
        if not isinstance(value, dict) or WRAPPED_KEY not in value:
            return None, [f"(root): the answer goes in the {WRAPPED_KEY!r} argument"]
        value = value[WRAPPED_KEY]
    return spec.validate(value)


def correction(spec: OutputSpec, errors: list[str], *, called: bool) -> str:
    """What the model reads after an invalid answer: what was wrong and what to do now.

    `called`: the answer was a `final_result` call (else text). A model that answered in text
    where the run offers `final_result` is told to call it, not to call it "again"."""
    if spec.mode != "tool":
        how = "Reply with only JSON that matches the schema."
    elif called:
        how = f"Call {FINAL_RESULT_TOOL} with arguments that match the schema."
    else:
        how = (
            f"Give your answer by calling the {FINAL_RESULT_TOOL} tool with arguments that "
            "match the schema, not as text."
        )
    return "Error: your answer does not match the output schema: " + "; ".join(errors) + f". {how}"


@dataclass(frozen=True)
class Reading:
    """What a reply means: the next scratchpad, the outcome, and the observation for each call
    that must not run (an invalid `final_result`: the round answers it instead)."""

    pad: Scratchpad
    outcome: Outcome
    refused: Mapping[str, str] = field(default_factory=dict)


def read_typed_reply(pad: Scratchpad, reply: ModelReply, spec: OutputSpec) -> Reading | None:
    """Read a reply as a typed answer; None when it is neither an answer nor an attempt at one
    (a round of other tools, or an empty reply: the ordinary reader decides)."""
    final_calls = [c for c in reply.tool_calls if c.name == FINAL_RESULT_TOOL]
    if final_calls:
        call = final_calls[0]
        value, errors = parse_final_result(spec, call.arguments)
        raw = call.arguments
    elif reply.tool_calls or not (reply.content or "").strip():
        return None
    else:
        raw = reply.content or ""
        value, errors = parse_text(spec, raw)
    if not errors:
        return Reading(pad, Outcome(answer=render_output(value), output=value))
    used = pad.output_retries_used + 1
    pad = pad.model_copy(update={"output_retries_used": used, "output_errors": errors})
    if used > spec.retries:
        return Reading(pad, Outcome(invalid_output=shorten(raw, 4_000, one_line=False)))
    message = correction(spec, errors, called=bool(final_calls))
    if final_calls:
        refused = {c.id: message for c in final_calls}
        return Reading(pad, Outcome(), refused)
    retry = [reply.as_message(), ChatMessage.user(message)]
    return Reading(pad.model_copy(update={"messages": [*pad.messages, *retry]}), Outcome())
