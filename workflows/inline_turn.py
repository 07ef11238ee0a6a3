"""`InlineTurn`: a session's turn run inside the session's own history.

The loop is `AgentWorkflow`'s, as an object (`AgentWorkflow.turn_in`): its model and tool
activities, approvals and sub-agent runs are the session's. A turn recorded this way stores its
message once in the `send` update and once in its first model call, and its tool output once in
the tool's activity and once in the next model call; the remembered turns are named, not sent
again (see `loop.context_reuse`). A child run per turn recorded the message three more times and
the memory window three times (BENCHMARKS.md, target 3).
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from contracts.agent_input import AgentInput
    from contracts.session import TurnReport
    from workflows.agent_workflow import AgentWorkflow
    from workflows.session_link import TurnCancelled, turn_report
    from workflows.turn_host import TurnHost


class InlineTurn:
    """Runs one turn as a task of the session workflow; `report` is set when it has ended."""

    def __init__(self, host: TurnHost, agent_input: AgentInput) -> None:
        self.agent = AgentWorkflow.turn_in(host)
        """The turn's loop: the session forwards people's signals and updates to it."""
        self.report: TurnReport | None = None
        self._task = asyncio.create_task(self._run(agent_input))

    @property
    def done(self) -> bool:
        return self.report is not None

    def cancel(self) -> None:
        """Cancel the turn (its activities and child runs are cancelled and awaited); it ends
        with a `cancelled` report and the session goes on."""
        self._task.cancel()

    async def wait(self) -> None:
        """Until the turn has ended (after `cancel`: until its cancellation is complete)."""
        await asyncio.wait({self._task})

    async def _run(self, agent_input: AgentInput) -> None:
        link = agent_input.session
        assert link is not None
        try:
            result = await self.agent.run(agent_input.model_dump(mode="json"))
        except (Exception, asyncio.CancelledError) as error:
            if is_cancelled_exception(error):
                error = TurnCancelled("the turn was cancelled")
            self.report = turn_report(link, result=None, error=error, usage=self.agent.pad.usage)
            return
        self.report = turn_report(link, result=result, error=None, usage=result.usage)
