"""The request bodies of the HTTP API: the workflows' own contracts where one fits (a run's
input is `AgentInput`, a steering message `SteerMessage`, a session's `SessionInput`, a message
`SendMessage`, a client tool's answer `ToolResultUpdate`), with the few fields HTTP adds (`id`;
`reply` among the decisions)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_agents.contracts.agent_input import AgentInput
from durable_agents.contracts.approvals import MAX_REPLY_CHARS, DecideUpdate, ReplySignal
from durable_agents.contracts.client_tools import ToolResultUpdate
from durable_agents.contracts.messages import SteerMessage
from durable_agents.contracts.session import SessionInput
from durable_agents.contracts.workflow_ids import ID_CHARS, MAX_ID_CHARS, SafeId

WorkflowId = Field(
    default=None,
    description=f"Workflow id (default: a generated one): {ID_CHARS}, at most {MAX_ID_CHARS}.",
)


class StartRun(AgentInput):
    """`POST /v1/runs`: the workflow input (`AgentInput`), plus an optional `id`."""

    id: SafeId | None = WorkflowId

    def workflow_input(self) -> dict[str, Any]:
        """Only the fields the client gave, so the worker's defaults (its model, every tool)
        still apply, as with `agent run`."""
        return self.model_dump(mode="json", exclude_unset=True, exclude={"id"})


class StartSession(SessionInput):
    """`POST /v1/sessions`: the session's settings (`SessionInput`), plus an optional `id`."""

    id: SafeId | None = WorkflowId

    def workflow_input(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True, exclude={"id"})


class Decision(DecideUpdate):
    """`POST /v1/runs/{id}/decisions`: the `decide` update's fields and digest rules (approve,
    reject; approve with `args` is an edit), or `reply` with `text` to answer a question."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "reject", "reply"]  # type: ignore[assignment]
    text: str | None = Field(default=None, max_length=MAX_REPLY_CHARS)

    def update(self) -> dict[str, Any]:
        """The `decide` update's payload (only what was given)."""
        return self.model_dump(exclude_none=True, exclude={"text"})

    def reply(self) -> dict[str, Any]:
        """The `reply` signal's payload."""
        return ReplySignal(call_id=self.call_id, text=self.text or "", by=self.by).model_dump(
            exclude_none=True
        )


class Cancel(BaseModel):
    """`POST /v1/runs/{id}/cancel`: nothing needed; a reason is logged by the server."""

    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(default=None, max_length=10_000)


class Message(BaseModel):
    """`POST /v1/sessions/{id}/messages`: update `send`'s (`SendMessage`) text and sender; a
    typed answer per message is for the Temporal client for now."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)
    by: str | None = Field(default=None, max_length=200)


Steer = SteerMessage
"""`POST /v1/runs/{id}/steer`: the `steer` update's fields."""

ToolResult = ToolResultUpdate
"""`POST /v1/runs/{id}/tool_results`: the `tool_result` update's fields, `{"call_id",
"result"}` or `{"call_id", "error"}` (`by`?)."""


class Started(BaseModel):
    """201 to a start: the workflow id to use in every other route."""

    workflow_id: str
    run_id: str | None = None
