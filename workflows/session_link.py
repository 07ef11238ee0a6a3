"""How a run that is a session's turn talks to its session: it reports how it ended, and
which of its calls wait for a person. The session may have moved on to a new run by
continue-as-new; a signal by workflow id reaches the current one."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.agent_input import SessionLink
    from contracts.agent_result import AgentResult
    from contracts.session import TurnReport
    from contracts.usage import TokenUsage
    from loop.continuation import compact_steps

REPORTED_STEP_CHARS = 4_000
"""The turn's steps reach the session shortened to this many observation characters."""


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


async def signal_session(link: SessionLink | None, name: str, payload: Any) -> None:
    """Signal the session (if the run is a turn); a session that ended is not an error of the
    run, whose own result stands."""
    if link is None:
        return
    try:
        await workflow.get_external_workflow_handle(link.workflow_id).signal(name, payload)
    except Exception as error:
        workflow.logger.warning("could not signal session %s: %s", name, error)
