"""How a run that is a session's turn talks to its session: it reports how it ended, and
which of its calls wait for a person. The session may have moved on to a new run by
continue-as-new; a signal by workflow id reaches the current one."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_input import AgentInput, SessionLink
    from durable_agents.contracts.agent_result import AgentResult, ToolStep
    from durable_agents.contracts.approvals import PendingRequest
    from durable_agents.contracts.session import PendingList, TurnReport
    from durable_agents.contracts.usage import TokenUsage
    from durable_agents.loop.continuation import compact_steps


def session_steps(steps: list[ToolStep]) -> list[ToolStep]:
    """A turn's steps as they reach its session (the report, the `send` update's result, a
    child turn's own result): every observation over `SHORTENED_OBSERVATION_CHARS` shortened.
    The full text is in the tool's activity result; a copy in each of those would store a
    turn's tool output in full again and again."""
    return compact_steps(steps, budget_chars=0)


class TurnCancelled(Exception):
    """How a cancelled run reports its end to its session (which would otherwise wait)."""


def turn_report(
    link: SessionLink,
    *,
    result: AgentResult | None,
    error: BaseException | None,
    usage: TokenUsage,
) -> TurnReport:
    """What a finished turn tells its session: the result, or the error it failed with."""
    return TurnReport(
        turn_id=link.turn_id,
        workflow_id=workflow.info().workflow_id,
        token=link.token,
        answer=result.answer if result else "",
        stop_reason=result.stop_reason if result else None,
        steps=session_steps(result.steps) if result else [],
        usage=result.usage if result else usage,
        error=None if error is None else str(error) or type(error).__name__,
        output=result.output if result else None,
    )


def run_scope(params: AgentInput) -> str:
    """What the ids of a run's child runs and its tools' idempotency keys start with: the
    workflow id, or for a turn run inside its session, the turn's own scope."""
    session = params.session
    if session is not None and session.scope is not None:
        return session.scope
    return workflow.info().workflow_id


async def signal_session(link: SessionLink | None, name: str, payload: Any) -> None:
    """Signal the session (if the run is a turn); a session that ended is not an error of the
    run, whose own result stands."""
    if link is None:
        return
    try:
        await workflow.get_external_workflow_handle(link.workflow_id).signal(name, payload)
    except Exception as error:
        workflow.logger.warning("could not signal session %s: %s", name, error)


def pending_report(link: SessionLink, pending: list[PendingRequest], sequence: int) -> Any:
    """What a child turn sends its session as `turn_pending`: its pending requests with its
    token and the report's number (the bare list for a session that gave it no token, as such
    sessions expect)."""
    if not link.token:
        return pending
    return PendingList(
        workflow_id=workflow.info().workflow_id,
        token=link.token,
        sequence=sequence,
        pending=pending,
    )
