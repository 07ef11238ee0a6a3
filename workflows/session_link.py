"""How a run that is a session's turn talks to its session: it reports how it ended, and
which of its calls wait for a person. The session may have moved on to a new run by
continue-as-new; a signal by workflow id reaches the current one."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.agent_input import AgentInput, SessionLink
    from contracts.agent_result import AgentResult
    from contracts.session import TurnReport
    from contracts.usage import TokenUsage
    from loop.continuation import compact_steps

REPORTED_STEP_CHARS = 0
"""A turn's steps reach its session (and the `send` update's result) with every observation
over `SHORTENED_OBSERVATION_CHARS` shortened: the full text is in the tool's activity result,
and a copy in each report would store a turn's tool output in full three more times."""


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
        answer=result.answer if result else "",
        stop_reason=result.stop_reason if result else None,
        steps=compact_steps(result.steps, budget_chars=REPORTED_STEP_CHARS) if result else [],
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
