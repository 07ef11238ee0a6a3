"""What the `status` query of `AgentWorkflow` returns while a run goes on."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from durable_agents.contracts.agent_result import StopReason, ToolStep
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.messages import SteerMessage
from durable_agents.contracts.plan import PlanState
from durable_agents.contracts.usage import TokenUsage

Phase = Literal["starting", "thinking", "running_tools", "waiting_for_human", "done", "cancelled"]


class RunningCall(BaseModel):
    """A tool call running now (started, not yet finished), with the progress it reported."""

    call_id: str
    tool: str
    args: dict[str, Any] = {}
    started_at: datetime
    progress: str | None = None
    """The tool's latest `ctx.progress(message)`."""
    fraction: float | None = None


class AgentStatus(BaseModel):
    """A snapshot of a run: where it is, how far it went, and what it spent."""

    phase: Phase = "starting"
    iteration: int = 0
    max_iterations: int = 0
    model: str | None = None
    usage: TokenUsage = TokenUsage()
    steps: int = 0
    recent_steps: list[ToolStep] = []
    stop_reason: StopReason | None = None
    pending: list[PendingRequest] = []
    steering: list[SteerMessage] = []
    plan: PlanState | None = None
    """In plan-and-execute mode: the plan, each step's status, its revisions."""
    """Steering messages queued for the model's next call."""
    running: list[RunningCall] = []
    """Tool calls running now, each with its latest progress (not only after the round)."""
    definition: str | None = None
    """The label (`name@version`) of the definition the run goes by (docs/concepts/
    definitions.md); None: a run recorded before definitions."""
    definition_digest: str | None = None
