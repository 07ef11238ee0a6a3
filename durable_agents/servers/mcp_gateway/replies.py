"""What the MCP gateway's tools return (their structured output; the text content carries the
same as JSON): a run's or a turn's answer, or what it waits for and how to answer it."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from durable_agents.client.outcome import RunOutcome
from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.session import TurnResult
from durable_agents.servers.run_control import Decided, Paused

ReplyStatus = Literal[
    "running", "waiting_for_person", "completed", "failed", "cancelled", "terminated", "timed_out"
]


class PendingCall(BaseModel):
    """A call waiting for a person: what it is, and what `decide` needs to answer it."""

    call_id: str
    kind: str
    """`approval` or `plan` (decide approve / reject), `question` (decide reply)."""
    tool: str
    args: dict[str, Any]
    args_digest: str
    """Pass it to `decide` to approve exactly these arguments."""
    question: str | None = None
    expires_at: datetime | None = None
    on_timeout: str

    @classmethod
    def of(cls, request: PendingRequest) -> PendingCall:
        return cls(
            **request.model_dump(
                include={"call_id", "tool", "args", "args_digest", "question", "expires_at"}
            ),
            kind=request.kind.value,
            on_timeout=request.on_timeout,
        )


class AgentReply(BaseModel):
    """A run's (or a session turn's) state as a tool returns it."""

    workflow_id: str
    status: ReplyStatus
    answer: str | None = None
    output: Any = None
    """A typed answer (runs with an output schema)."""
    stop_reason: str | None = None
    error: str | None = None
    turn: int | None = None
    """Session messages: the turn that answered."""
    pending: list[PendingCall] = []
    next: str | None = None
    """What to do next, for a caller that reads text."""

    @classmethod
    def running(cls, workflow_id: str) -> AgentReply:
        return cls(
            workflow_id=workflow_id,
            status="running",
            next="call `result` with this workflow_id to wait for the answer",
        )

    @classmethod
    def paused(cls, paused: Paused) -> AgentReply:
        return cls(
            workflow_id=paused.workflow_id,
            status="waiting_for_person",
            pending=[PendingCall.of(p) for p in paused.pending],
            next="ask the user, then call `decide` with this workflow_id, the call_id and "
            "'approve' (with its args_digest) or 'reject' (with a reason), or 'reply' with a "
            "text for a question; `decide` then waits for the run to go on",
        )

    @classmethod
    def of_outcome(cls, outcome: RunOutcome) -> AgentReply:
        result = outcome.result
        if result is None:
            return cls(
                workflow_id=outcome.workflow_id,
                status=outcome.ending,
                error=f"{outcome.error_type}: {outcome.message}",
            )
        return cls(
            workflow_id=outcome.workflow_id,
            status="completed",
            answer=result.answer,
            output=result.output,
            stop_reason=result.stop_reason.value,
        )

    @classmethod
    def of_turn(cls, session_id: str, result: TurnResult) -> AgentReply:
        return cls(
            workflow_id=session_id,
            status="failed" if result.error else "completed",
            answer=result.answer,
            output=result.output,
            stop_reason=result.stop_reason.value if result.stop_reason else None,
            error=result.error,
            turn=result.turn,
        )


class DecisionReply(BaseModel):
    """What `decide` recorded, and the run after it (`then`: its answer, or the next wait)."""

    call_id: str
    outcome: str
    """`approved`, `edited`, `rejected` or `replied`."""
    by: str | None = None
    executed_args: dict[str, Any] | None = None
    then: AgentReply | None = None

    @classmethod
    def of(cls, decided: Decided, by: str | None, then: AgentReply | None) -> DecisionReply:
        decision: HumanDecision | None = decided.decision
        if decision is None:
            return cls(call_id=decided.call_id, outcome="replied", by=by, then=then)
        return cls(
            call_id=decided.call_id,
            outcome=decision.outcome,
            by=decision.by,
            executed_args=decision.executed_args,
            then=then,
        )
