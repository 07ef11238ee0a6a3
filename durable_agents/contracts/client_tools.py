"""Client-side tools: tools a run's client declares and runs itself (a browser's location, a
file picker, an IDE action), and the `tool_result` update that answers a call of one.

The model calls a client tool like any other; the run then waits durably for the client (a
pending request of kind `client_tool`, with the command that answers it) and the client's
result, checked against the declared `result_schema`, becomes the observation.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from durable_agents.contracts.approvals import Who

CLIENT_TOOL_RESULT_UPDATE = "tool_result"
"""The update that answers a pending client tool call."""
CLIENT_TOOL_REFUSED = "ClientToolRefused"
"""Error type of a refused `tool_result` update (unknown or answered call, a result that breaks
the schema, ...): nothing enters history."""

MAX_CLIENT_TOOLS = 50
MAX_CLIENT_RESULT_BYTES = 256 * 1024
"""Largest result a client may send (as compact JSON): it becomes an observation and a step."""
MAX_CLIENT_ERROR_CHARS = 50_000

ClientToolName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")]
"""A tool name every provider takes (letters, digits, `_` and `-`, at most 64)."""


class ClientToolSpec(BaseModel):
    """One client-side tool, as the run's input declares it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: ClientToolName
    description: str = Field(min_length=1, max_length=10_000)
    parameters: dict[str, Any] = Field(
        description="JSON Schema of the arguments (an object schema), as the model is told."
    )
    result_schema: dict[str, Any] | None = Field(
        default=None,
        description="JSON Schema the client's result must match; None: any JSON value.",
    )

    @model_validator(mode="after")
    def _object_parameters(self) -> ClientToolSpec:
        if self.parameters.get("type") != "object":
            raise ValueError(
                f'parameters of {self.name}: an object schema ({{"type": "object", ...}})'
            )
        return self


def unique_client_tools(specs: list[ClientToolSpec] | None) -> list[ClientToolSpec] | None:
    """`specs`, or ValueError naming a name declared twice."""
    names = [s.name for s in specs or []]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"client tool name(s) declared twice: {', '.join(twice)}")
    return specs


class ToolResultUpdate(BaseModel):
    """Update `tool_result`: `{"call_id", "result"}` or `{"call_id", "error"}` (`by`?)."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=500)
    result: Any = None
    error: str | None = Field(default=None, min_length=1, max_length=MAX_CLIENT_ERROR_CHARS)
    by: Who = None

    @model_validator(mode="after")
    def _result_or_error(self) -> ToolResultUpdate:
        given = {"result", "error"} & self.model_fields_set
        if len(given) != 1:
            raise ValueError('give exactly one of "result" and "error"')
        return self

    @property
    def failed(self) -> bool:
        return "error" in self.model_fields_set
