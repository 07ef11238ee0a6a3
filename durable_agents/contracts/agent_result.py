"""The result of `AgentWorkflow`: the answer, why the loop stopped, and every step it took."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from durable_agents.contracts.approvals import HumanDecision
from durable_agents.contracts.messages import ToolCall
from durable_agents.contracts.omitted import default_omitted, empty_omitted, none_omitted
from durable_agents.contracts.plan import PlanState
from durable_agents.contracts.stop_reason import StopReason
from durable_agents.contracts.usage import TokenUsage

__all__ = ["StopReason"]  # where it was defined before; `contracts.stop_reason` now

StepStatus = Literal["ok", "error", "rejected", "denied"]


class ToolStep(BaseModel):
    """One tool call of the run and what came of it (n8n's intermediate step).

    `args` holds the arguments the tool ran with (a reviewer may have edited them), or None when
    the model's argument text was not valid; `raw_arguments` is always the text the model sent.
    `human` records the person's decision (or its timeout) for calls that waited for one.
    """

    iteration: int
    call_id: str
    tool: str
    raw_arguments: str
    args: dict[str, Any] | None
    observation: str
    status: StepStatus
    started_at: datetime
    finished_at: datetime
    human: HumanDecision | None = None
    policy: str | None = None
    """What decided whether the call waited for a person: `policy rule write_* → ask`, or
    `tool definition`."""
    child_workflow_id: str | None = None
    """For a call of an agent profile: the child run that did the work."""


class ModelFailure(BaseModel):
    """A model that was tried and given up on before another one answered (or none did)."""

    model: str
    error: str


class ModelCall(BaseModel):
    """One model call of the run: which turn, what for, which model answered (and which failed
    before it), how long, what it cost, how much it reasoned, and the tool calls of its reply
    that were dropped because they named no tool of the run (seed 000: the reply's text was the
    answer). Fields that are unset (no reasoning, nothing dropped) are left out of the JSON."""

    turn: int
    purpose: Literal["turn", "final_answer", "summary", "plan", "synthesis"]
    model: str
    failed_models: list[ModelFailure] = []
    usage: TokenUsage
    tool_calls: int
    finish_reason: str | None
    started_at: datetime
    finished_at: datetime
    reasoning_chars: int = default_omitted(0)
    """Length of the reasoning the provider sent with the reply (`reasoning_content`)."""
    reasoning: str | None = none_omitted()
    """The reasoning text itself, kept only with the run setting `record_reasoning`."""
    dropped_calls: list[ToolCall] = empty_omitted()
    """The reply's tool calls, as the model sent them, when every one named a tool the run does
    not have and the reply's text became the answer (`unknown_tools: answer_with_text`)."""


class AgentResult(BaseModel):
    """What a finished run returns."""

    answer: str
    """The answer as text; with an output schema, the JSON of `output`."""
    stop_reason: StopReason
    output: Any = None
    """With `output_schema` / `output_type`: the validated JSON value of the answer."""
    output_errors: list[str] = []
    """With stop reason `invalid_output`: why the last answer did not match the schema."""
    plan: PlanState | None = None
    """Plan-and-execute mode: the plan, every revision, and each step's outcome."""
    iterations: int
    steps: list[ToolStep]
    steps_omitted: int = 0
    """How many of the earliest steps are left out of `steps` (only in very long runs; each is
    still in the history of the run that made it)."""
    model_calls: list[ModelCall] = []
    usage: TokenUsage
    cost_usd: float | None = None
    model: str
