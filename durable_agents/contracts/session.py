"""`SessionWorkflow`'s boundary: a long-lived conversation under a session id.

Each turn runs the agent loop inside the session's own history (`turns: inline`, the default),
or as a child `AgentWorkflow` with a history and a Web UI page of its own (`turns: child`); the
session remembers a window of earlier turns and gives it to the next turn as `history`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from durable_agents.contracts.agent_input import AgentSettings
from durable_agents.contracts.agent_result import StopReason, ToolStep
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.definition import AgentDefinition
from durable_agents.contracts.model_io import CachedConversation
from durable_agents.contracts.omitted import default_omitted, none_omitted
from durable_agents.contracts.payload_limits import STORED, TODAY, within
from durable_agents.contracts.principals import DEFAULT_TENANT, TENANT_PATTERN
from durable_agents.contracts.stream_state import StreamState
from durable_agents.contracts.usage import TokenUsage

MemoryMode = Literal["answers", "answers_and_tools"]
TurnRuns = Literal["inline", "child"]


class MemoryTurn(BaseModel):
    """One remembered exchange: what the user said and what the agent answered.

    `incomplete` says why a turn ended without an answer (it stopped at a limit, or failed);
    its `answer` is then empty, and the next turns read a note that the request did not
    complete instead of the stop text.
    """

    turn: int
    user: str
    answer: str
    tools_note: str | None = None
    incomplete: str | None = None


class TurnOutput(BaseModel):
    """A typed answer asked for by one message (overrides the session's agent settings)."""

    output_schema: dict[str, Any] | None = Field(
        default=None, description="JSON Schema this turn's answer must match."
    )
    output_type: str | None = Field(
        default=None, min_length=1, description="A registered output type, instead."
    )

    def overrides(self) -> dict[str, Any]:
        """The output fields this message sets (they replace the session's agent settings)."""
        fields = {name: getattr(self, name) for name in TurnOutput.model_fields}
        return {name: value for name, value in fields.items() if value is not None}


class QueuedMessage(TurnOutput):
    """A message waiting for its turn; `id` is the update id, or `signal-N` for a signal."""

    id: str
    text: str
    by: str | None = None


class TurnReport(BaseModel):
    """What a finished turn reports to its session (sent by the child as a signal)."""

    turn_id: str
    workflow_id: str
    token: str = ""
    """The child turn's `SessionLink.token`: a report without it is not from the session's
    running turn."""
    answer: str = ""
    stop_reason: StopReason | None = None
    steps: list[ToolStep] = []
    usage: TokenUsage = TokenUsage()
    error: str | None = None
    output: Any = None


class PendingList(BaseModel):
    """Signal `turn_pending` (from a running child turn): its pending requests."""

    workflow_id: str = ""
    token: str = ""
    sequence: int = Field(default=0, ge=0)
    """Counts the turn's reports; an older one arriving late is dropped (see `ChildPending`)."""
    pending: list[PendingRequest] = Field(max_length=200)


class TurnResult(BaseModel):
    """What update `send` returns: the turn's answer, steps and usage (or its error)."""

    turn: int
    workflow_id: str
    answer: str
    stop_reason: StopReason | None
    steps: list[ToolStep]
    usage: TokenUsage
    error: str | None = None
    output: Any = None
    """The turn's validated typed answer, when its message asked for one."""


class RunningTurn(BaseModel):
    """The turn being answered. `workflow_id` is where its events are: the session's own id
    for a turn run inline (`inline`), else the turn's child run `<session>/turn-<n>`."""

    turn: int
    message: QueuedMessage
    workflow_id: str
    inline: bool = False
    token: str = ""
    """Given to a child turn in its `SessionLink`; its reports must carry it."""
    reports: int = default_omitted(0)
    """The number of the newest `turn_pending` taken from a child turn."""


class SessionCarry(BaseModel):
    """What a session carries across continue-as-new."""

    memory: list[MemoryTurn] = []
    queued: list[QueuedMessage] = []
    running: RunningTurn | None = None
    pending: list[PendingRequest] = []
    turns: int = 0
    usage: TokenUsage = TokenUsage()
    ended: bool = False
    end_reason: str | None = None
    runs: int = 1
    started_at: datetime | None = None
    conversation: CachedConversation | None = None
    """What the worker's context cache holds for inline turns (digests, not the messages): the
    next run's first turn names the remembered messages instead of sending them again."""
    definition: AgentDefinition | None = none_omitted()
    """The definition the session's turns go by (`workflows.definitions`): recorded at its
    first turn, kept or migrated at each turn boundary after."""


class SessionInput(BaseModel):
    """How the session's agent runs, and what it remembers (strict types and bounded numbers,
    as `AgentSettings`)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    agent: AgentSettings = Field(
        default=AgentSettings(),
        description="How each turn's agent runs: every AgentWorkflow option but the prompt.",
    )
    memory_max_turns: int = Field(
        default=20, ge=0, le=1000, description="The most earlier turns a turn remembers."
    )
    memory_max_tokens: int | None = Field(
        default=None,
        ge=100,
        le=200_000,
        description="The most estimated tokens of remembered messages; unset: no such limit.",
    )
    memory_mode: MemoryMode = Field(
        default="answers",
        description=(
            "answers: each turn's question and answer, remembered once the turn has its answer; "
            "answers_and_tools: with a compact note of the tools it used."
        ),
    )
    turns: TurnRuns = Field(
        default="inline",
        description=(
            "inline: each turn's model and tool calls are activities in the session's own "
            "history (each text recorded once or twice; the session continues-as-new between "
            "turns, and a turn that outgrows it moves to a child run). child: each turn is a "
            "child AgentWorkflow `<session>/turn-<n>` with its own history and Web UI page."
        ),
    )
    max_message_chars: int = Field(
        default=50_000,
        ge=1,
        le=STORED.text_chars,  # today's 200 000 without a payload store
        description="The longest message `send` takes; a longer one is refused.",
    )
    continue_as_new_after_events: int = Field(
        default=2_000,
        ge=30,
        le=40_000,
        description="History events before the session continues-as-new between turns.",
    )
    tenant: str = Field(
        default=DEFAULT_TENANT,
        pattern=TENANT_PATTERN,
        exclude_if=lambda tenant: tenant == DEFAULT_TENANT,
        description="The session's tenant (`AgentTenant`); every turn runs in it.",
    )
    starter: str | None = none_omitted(
        max_length=200, description="The principal who started the session; its turns' too."
    )
    carry: SessionCarry | None = Field(
        default=None, description="Set by the workflow itself when it continues-as-new."
    )
    stream: StreamState = None

    @model_validator(mode="after")
    def _turns_run_in_the_tenant(self) -> SessionInput:
        """Every turn runs in the session's tenant, started by its starter (a tenant set only
        in `agent` is the session's)."""
        if self.tenant == DEFAULT_TENANT and self.agent.tenant != DEFAULT_TENANT:
            self.tenant = self.agent.tenant
        if self.starter is None:
            self.starter = self.agent.starter
        if (self.agent.tenant, self.agent.starter) != (self.tenant, self.starter):
            self.agent = self.agent.model_copy(
                update={"tenant": self.tenant, "starter": self.starter}
            )
        return self

    @field_validator("max_message_chars")
    @classmethod
    def _payload_limits(cls, value: int, info: ValidationInfo) -> int:
        return within(value, value, TODAY.text_chars, STORED.text_chars, info)

    @property
    def raised_limits(self) -> bool:
        """Whether this session takes messages over today's limits: it was allowed to (its
        worker stores large payloads) when its input was read."""
        return self.max_message_chars > TODAY.text_chars


class SendMessage(TurnOutput):
    """Update or signal `send`: `{"text": "...", "by"?: "...", "output_schema"?: {...}}`."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)
    by: str | None = Field(default=None, max_length=200)


class EndSession(BaseModel):
    """Signal `end`: `{"reason"?: "...", "by"?: "..."}`."""

    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(default=None, max_length=10_000)
    by: str | None = Field(default=None, max_length=200)


class CancelTurn(BaseModel):
    """Signal `cancel_turn`: no input, or `{"reason"?: "...", "by"?: "..."}`."""

    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(default=None, max_length=10_000)
    by: str | None = Field(default=None, max_length=200)


SessionState = Literal["idle", "running", "ended"]


class SessionStatus(BaseModel):
    state: SessionState
    turns: int
    queued: int
    running: RunningTurn | None
    pending: list[PendingRequest]
    usage: TokenUsage
    remembered_turns: int
    runs: int
    """Executions so far (1 + continue-as-new count)."""


class SessionResult(BaseModel):
    """What the session returns when it ends."""

    turns: int
    usage: TokenUsage
    reason: str | None
    last_answer: str | None
    runs: int
