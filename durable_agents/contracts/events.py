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
history event); events from activities (a retry's `model_call_retrying`, deltas,
`tool_progress`) go through the stream's de-duplicating signal, batched. Each model call has one
`model_call_started` and one `model_call_finished` (a consumer that counts open calls reaches
zero); a call that starts over (an attempt retried after a failure or a worker that died
mid-stream, or the next fallback model) publishes `model_call_retrying` in between: a client
discards the partial text it showed for that `model_call`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from durable_agents.contracts.approvals import RepeatOf
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.contracts.stop_reason import StopReason
from durable_agents.contracts.usage import TokenUsage

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


ModelPurpose = Literal["turn", "final_answer", "summary", "plan", "synthesis"]


class ModelCallStarted(EventBase):
    """Published once per model call, by the workflow as it schedules the call (its first
    attempt of its first model); `model_call_finished` closes it. A call that starts over says so
    with `model_call_retrying`. (Streams from workers before `model_call_retrying` carry a second
    `model_call_started` for a retried attempt or a fallback model instead: a reader treats a
    start for a call already open as `model_call_retrying`.)"""

    type: Literal["model_call_started"] = "model_call_started"
    model_call: int
    """The loop iteration the call belongs to (1-based; the `turn` of the run's model calls
    in its result). With `purpose` it names the call: a summary shares its iteration."""
    attempt: int = 1
    """The activity attempt (a retry after a failure or a worker that died mid-stream: 2, ...);
    the deltas of a lower attempt of the same call are void."""
    model: str | None = None
    purpose: ModelPurpose = "turn"


class ModelCallRetrying(EventBase):
    """An open model call starts over: the text and reasoning deltas received for its
    `(turn, model_call, purpose)` so far are void (the call stays open: no new start, and one
    `model_call_finished` still closes it). Published by the `call_model` activity as a retried
    attempt starts (`reason` `retry`: the last attempt failed, timed out, or its worker died),
    and by the workflow as it asks the next fallback model (`fallback`) or sends the whole
    conversation after a context cache miss (`resend`)."""

    type: Literal["model_call_retrying"] = "model_call_retrying"
    model_call: int
    attempt: int
    """The attempt that starts (the activity's attempt: 2, 3, ...; 1 for a fallback model's
    first); later deltas carry it."""
    model: str | None = None
    purpose: ModelPurpose = "turn"
    reason: Literal["retry", "fallback", "resend"] = "retry"
    """`retry`: the activity's next attempt; `fallback`: the next fallback model; `resend`: the
    whole conversation again, after the worker that took the call lacked what its context delta
    builds on (the retry of a call whose worker died, on another worker)."""


class TextDelta(EventBase):
    """A piece of the reply's text, in order (pieces that arrived within one batch, joined)."""

    type: Literal["text_delta"] = "text_delta"
    model_call: int
    attempt: int = 1
    text: str
    purpose: ModelPurpose = "turn"


class ReasoningDelta(EventBase):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    model_call: int
    attempt: int = 1
    text: str
    purpose: ModelPurpose = "turn"


class ModelCallFinished(EventBase):
    """Published by the workflow once the call's reply is recorded: the reply is final."""

    type: Literal["model_call_finished"] = "model_call_finished"
    model_call: int
    model: str | None = None
    purpose: ModelPurpose = "turn"
    text: str | None = None
    """The reply's text: whole when no delta carried it (a reply quicker than one batch of
    deltas, 150 ms), else shortened for display (the deltas carry it, with `rest`)."""
    rest: str | None = None
    """The end of the reply's text that no `text_delta` carried: what was left when a reply
    that outlasted its first batch was complete. A client showing the deltas appends it; it
    saves the last batch's signal on every streamed reply."""
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
    status: Literal["ok", "error", "rejected", "denied", "timed_out", "cancelled"]
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
    repeat_of: RepeatOf | None = None
    """Set when an identical call already ran and succeeded in the run: approving repeats it."""


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


RunOutcome = Literal["failed", "cancelled", "terminated", "timed_out"]
"""How a run that did not finish ended (`RunFailed.outcome`)."""


class RunFailed(EventBase):
    """The run (or a session's turn) failed, was cancelled, terminated or timed out: no
    `run_finished` follows."""

    type: Literal["run_failed"] = "run_failed"
    error: str
    error_type: str | None = None
    cancelled: bool = False
    outcome: RunOutcome | None = None
    """How it ended; read from `cancelled` when the publisher did not say (the run's own
    workflow says `failed` or `cancelled`; only a reader says `terminated` or `timed_out`)."""
    synthesized: bool = False
    """Not published by the run: its reader (`runtime.event_stream.follow_events`, `agent
    serve`'s feeds) made it from the workflow's close status, because the run closed without a
    final event of its own (a terminated or timed-out run cannot publish)."""

    @model_validator(mode="after")
    def _named_outcome(self) -> RunFailed:
        if self.outcome is None:
            self.outcome = "cancelled" if self.cancelled else "failed"
        return self


class TurnStarted(EventBase):
    """A session started a turn (on the session's stream). An inline turn's events follow on
    the same stream, carrying `turn`; a child turn (`turns: child`) publishes them on its own
    run's stream, `child_workflow_id`."""

    type: Literal["turn_started"] = "turn_started"
    message: str
    """The user's message, shortened for display."""
    by: str | None = None
    child_workflow_id: str | None = None


class TurnMoved(EventBase):
    """A session's inline turn outgrew the session's history: the rest of it runs as the child
    run `child_workflow_id`, whose own stream carries its events from here on (as a child
    turn's; its `turn_finished` comes on the session's stream as usual)."""

    type: Literal["turn_moved"] = "turn_moved"
    child_workflow_id: str


class TurnFinished(EventBase):
    """A session's turn ended (answered, stopped at a limit, failed or cancelled)."""

    type: Literal["turn_finished"] = "turn_finished"
    stop_reason: StopReason | None = None
    answer: str | None = None
    error: str | None = None
    child_workflow_id: str | None = None


class SessionEnded(EventBase):
    """The session closed (signal `end`, everything queued answered): nothing follows."""

    type: Literal["session_ended"] = "session_ended"
    turns: int
    reason: str | None = None


AgentEvent = Annotated[
    RunStarted
    | ModelCallStarted
    | ModelCallRetrying
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
    | RunFinished
    | RunFailed
    | TurnStarted
    | TurnMoved
    | TurnFinished
    | SessionEnded,
    Field(discriminator="type"),
]
"""Any event of the stream."""

AGENT_EVENT = TypeAdapter(AgentEvent)
"""Reads one event from JSON or a dict: `AGENT_EVENT.validate_python(item)`."""

TERMINAL_EVENT_TYPES = frozenset({"run_finished", "run_failed"})
"""Event types after which a run's stream has nothing more (SSE readers end there). A
session's stream carries one `run_finished` per inline turn (with `turn` set) and ends only
at `SESSION_TERMINAL_EVENT_TYPES`."""

SESSION_TERMINAL_EVENT_TYPES = frozenset({"session_ended"})
"""Event types after which a session's stream has nothing more."""

ACTIVITY_EVENT_TYPES = frozenset(
    {
        "model_call_started",
        "model_call_retrying",
        "text_delta",
        "reasoning_delta",
        "tool_progress",
    }
)
"""The only event types a run takes from its stream's publish signal (what its own activities
publish, `activities/activity_events.py`), and only about a model or tool call it is running
(`workflows.run_events.PublishGuard`); every other event on a run's stream is published by its
workflow code. (`model_call_started`: a first attempt the workflow did not announce, and
retried attempts on workers from before `model_call_retrying`.) An activity that publishes a
new type must add it here."""

CHILD_TURN_EVENT_TYPES = frozenset({"turn_started", "turn_moved"})
"""A session's events that may name the child run whose stream carries the turn's events
from there on (`child_workflow_id`): `turns: child`, or an inline turn that outgrew the
session."""
