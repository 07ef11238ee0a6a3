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
from temporalio.exceptions import FailureError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from contracts.agent_input import AgentInput
    from contracts.scratchpad import Scratchpad
    from contracts.session import TurnReport
    from workflows.agent_workflow import AgentWorkflow
    from workflows.session_link import TurnCancelled, turn_report
    from workflows.turn_host import TurnHost, TurnOutgrewSession


class InlineTurn:
    """Runs one turn as a task of the session workflow; `report()` once it has ended."""

    def __init__(self, host: TurnHost, agent_input: AgentInput) -> None:
        self.agent = AgentWorkflow.turn_in(host)
        """The turn's loop: the session forwards people's signals and updates to it."""
        session = agent_input.session
        assert session is not None and session.scope is not None
        self.scope = session.scope
        """`<session>/turn-<n>`: the turn's sub-agent runs' ids start with it."""
        self.agent_input = agent_input
        self.outgrown: Scratchpad | None = None
        """Set when the turn outgrew the session's history: its state, for a child run."""
        self._task = asyncio.create_task(self._run(agent_input))

    @property
    def done(self) -> bool:
        return self._task.done()

    def cancel(self) -> None:
        """Cancel the turn (its activities and child runs are cancelled and awaited); it ends
        with a `cancelled` report and the session goes on."""
        self._task.cancel()

    async def wait(self) -> None:
        """Until the turn has ended (after `cancel`: until its cancellation is complete)."""
        await asyncio.wait({self._task})

    def report(self) -> TurnReport | None:
        """How the ended turn went (None: it outgrew the session, see `outgrown`). What would
        fail a run's *workflow task* (a bug in workflow code, nondeterminism) is raised here
        instead, in the session's main task, so the session waits for a fixed worker as a run
        would, rather than recording a failed turn."""
        return self._task.result()

    async def _run(self, agent_input: AgentInput) -> TurnReport | None:
        link = agent_input.session
        assert link is not None
        try:
            result = await self.agent.run_input(agent_input.model_dump(mode="json"))
        except TurnOutgrewSession as outgrown:
            self.outgrown = outgrown.carried
            return None
        except (FailureError, asyncio.CancelledError) as error:  # what ends a run
            reason: BaseException = error
            if is_cancelled_exception(error):
                reason = TurnCancelled("the turn was cancelled")
            return turn_report(link, result=None, error=reason, usage=self.agent.pad.usage)
        return turn_report(link, result=result, error=None, usage=result.usage)
