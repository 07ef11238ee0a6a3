"""The typed event stream every run and session publishes (`temporalio.contrib.workflow_streams`).

One topic, `events`, carries every event of a run; each event is one of the models below, told
apart by `type` (a discriminated union, `AgentEvent`). Applications read them through `agent
serve` (SSE, AG-UI), the `agent` CLI, or a `WorkflowStreamClient` of their own.

What every event carries:
- `version`: the schema version, bumped on a breaking change (a new event type or a new optional
  field is not breaking; readers skip types they do not know).
- `workflow_id`: the run that published it (a sub-agent's events are published on the child's
  own stream; the parent's `subagent_started` names it in `child_workflow_id`).
- `turn`: the session turn, where there is one.
- `at`: workflow time (`workflow.now()`), or the activity's clock for events an activity publishes.
- `call_id`: the tool call it is about, where one applies.
- `offset`: the event's position in the stream. It is NOT stored in the published item (a
  publisher cannot know it); readers fill it in from the stream item's offset, so an event a
  client holds always says where to resume (`Last-Event-ID`, `?after=N`).

Events from the workflow are published deterministically (replay rebuilds the same log, adds no
history event); events from activities (`model_call_started`, deltas, `tool_progress`) go through
the stream's de-duplicating signal, batched. A model call retried after a worker died mid-stream
publishes a new `model_call_started` with a higher `attempt`: a client discards the partial text
of lower attempts of the same `model_call`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from contracts.request_kind import RequestKind
from contracts.stop_reason import StopReason
from contracts.usage import TokenUsage

EVENT_SCHEMA_VERSION = 1
EVENTS_TOPIC = "events"
"""The stream topic that carries `AgentEvent`s."""


class EventBase(BaseModel):
    """Fields every event carries (see the module docstring)."""

    model_config = ConfigDict(extra="ignore")

    version: int = EVENT_SCHEMA_VERSION
    workflow_id: str
    turn: int | None = None
    at: datetime
    call_id: str | None = None
    offset: int | None = None


class RunStarted(EventBase):
    type: Literal["run_started"] = "run_started"
    prompt: str
    """The prompt, shortened for display."""
    model: str | None = None
    agent: str | None = None
    parent_workflow_id: str | None = None


class ModelCallStarted(EventBase):
    type: Literal["model_call_started"] = "model_call_started"
    model_call: int
    """The model call's number in the run (1-based)."""
    attempt: int = 1
    """The activity attempt; a higher attempt voids the deltas of lower ones."""
    model: str | None = None


class TextDelta(EventBase):
    type: Literal["text_delta"] = "text_delta"
    model_call: int
    attempt: int = 1
    text: str


class ReasoningDelta(EventBase):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    model_call: int
    attempt: int = 1
    text: str


class ModelCallFinished(EventBase):
    type: Literal["model_call_finished"] = "model_call_finished"
    model_call: int
    model: str | None = None
    usage: TokenUsage = TokenUsage()
    tool_calls: int = 0
    """How many tool calls the reply asked for."""


class ToolCallStarted(EventBase):
    type: Literal["tool_call_started"] = "tool_call_started"
    tool: str
    arguments: dict[str, Any] = {}


class ToolProgress(EventBase):
    type: Literal["tool_progress"] = "tool_progress"
    tool: str
    message: str
    fraction: float | None = None


class ToolCallFinished(EventBase):
    type: Literal["tool_call_finished"] = "tool_call_finished"
    tool: str
    status: Literal["ok", "error", "rejected", "timed_out", "cancelled"]
    observation: str
    """The observation the model reads, shortened for display."""


class ApprovalRequested(EventBase):
    type: Literal["approval_requested"] = "approval_requested"
    kind: RequestKind = RequestKind.APPROVAL
    tool: str
    arguments: dict[str, Any] = {}
    digest: str | None = None
    """The digest of the arguments as shown; a decision bound to it cannot approve others."""
    reason: str | None = None
    timeout_seconds: float | None = None


class ApprovalDecided(EventBase):
    type: Literal["approval_decided"] = "approval_decided"
    decision: Literal["approved", "rejected", "edited", "timed_out"]
    by: str | None = None
    comment: str | None = None


class QuestionAsked(EventBase):
    type: Literal["question_asked"] = "question_asked"
    question: str


class QuestionAnswered(EventBase):
    type: Literal["question_answered"] = "question_answered"
    reply: str
    by: str | None = None


class ClientToolRequested(EventBase):
    """A client-side tool the model called: the client runs it and answers `tool_result`."""

    type: Literal["client_tool_requested"] = "client_tool_requested"
    tool: str
    arguments: dict[str, Any] = {}
    result_schema: dict[str, Any] | None = None


class SteeringReceived(EventBase):
    type: Literal["steering_received"] = "steering_received"
    message: str
    by: str | None = None


class PlanStepView(BaseModel):
    """One step of a plan as the stream shows it."""

    index: int
    description: str
    status: str


class PlanUpdated(EventBase):
    type: Literal["plan_updated"] = "plan_updated"
    revision: int = 0
    steps: list[PlanStepView] = []
    reason: str | None = None


class SubagentStarted(EventBase):
    type: Literal["subagent_started"] = "subagent_started"
    agent: str
    child_workflow_id: str
    """The child run; its own stream carries its events."""


class SubagentFinished(EventBase):
    type: Literal["subagent_finished"] = "subagent_finished"
    agent: str
    child_workflow_id: str
    stop_reason: StopReason | None = None
    answer: str | None = None


class LimitReached(EventBase):
    type: Literal["limit_reached"] = "limit_reached"
    limit: str
    """Which limit: `max_iterations`, `token_budget`, ... (a `StopReason` value where one fits)."""
    detail: str | None = None


class RunFinished(EventBase):
    type: Literal["run_finished"] = "run_finished"
    stop_reason: StopReason
    answer: str | None = None


AgentEvent = Annotated[
    RunStarted
    | ModelCallStarted
    | TextDelta
    | ReasoningDelta
    | ModelCallFinished
    | ToolCallStarted
    | ToolProgress
    | ToolCallFinished
    | ApprovalRequested
    | ApprovalDecided
    | QuestionAsked
    | QuestionAnswered
    | ClientToolRequested
    | SteeringReceived
    | PlanUpdated
    | SubagentStarted
    | SubagentFinished
    | LimitReached
    | RunFinished,
    Field(discriminator="type"),
]
"""Any event of the stream."""

AGENT_EVENT = TypeAdapter(AgentEvent)
"""Reads one event from JSON or a dict: `AGENT_EVENT.validate_python(item)`."""

TERMINAL_EVENT_TYPES = frozenset({"run_finished"})
"""Event types after which a run's stream has nothing more (SSE readers end there)."""
