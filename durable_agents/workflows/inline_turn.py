"""`InlineTurn`: a session's turn run inside the session's own history.

The loop is `AgentLoop`, hosted by the session through `SessionTurnHost`: its model and tool
activities, approvals and sub-agent runs are the session's. A turn recorded this way stores its
message once in the `send` update and once in its first model call, and its tool output once in
the tool's activity and once in the next model call; the remembered turns are named, not sent
again (see `loop.context_reuse`). A child run per turn recorded the message three more times and
the memory window three times (BENCHMARKS.md, target 3).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import NoReturn, Protocol

from temporalio import workflow
from temporalio.exceptions import FailureError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_input import AgentInput
    from durable_agents.contracts.agent_result import AgentResult
    from durable_agents.contracts.agent_status import AgentStatus
    from durable_agents.contracts.approvals import PendingRequest
    from durable_agents.contracts.model_io import CachedConversation
    from durable_agents.contracts.scratchpad import Scratchpad
    from durable_agents.contracts.session import TurnReport
    from durable_agents.contracts.usage import TokenUsage
    from durable_agents.workflows.agent_loop import AgentLoop
    from durable_agents.workflows.loop_host import TurnOutgrewSession
    from durable_agents.workflows.run_events import RunEvents
    from durable_agents.workflows.session_link import TurnCancelled, turn_report


class HostSession(Protocol):
    """What a session gives the turns it hosts."""

    @property
    def conversation(self) -> CachedConversation:
        """The worker's context-cache entry the turns share, so a turn's first model call names
        the remembered messages the cache holds instead of sending them again."""
        ...

    def pending_changed(self, pending: list[PendingRequest]) -> None:
        """The turn's calls waiting for a person changed (shown in the session's status)."""
        ...

    def details_changed(self) -> None:
        """The turn's state changed: refresh the session's current details."""
        ...


class SessionTurnHost:
    """A `LoopHost` for a turn inside its session's history: the session built its links, shows
    its state and pending calls, and gets its answer back from `InlineTurn`; a turn whose
    history grows too large moves to a child run (`TurnOutgrewSession`)."""

    def __init__(self, session: HostSession) -> None:
        self._session = session

    def check_start(self, params: AgentInput) -> None:
        return None  # the session built the turn's input

    def conversation(self, params: AgentInput) -> CachedConversation:
        return self._session.conversation

    def announce(self, memo: dict[str, object]) -> None:
        return None  # the session's memo stays the session's

    def show(self, status: Callable[[], AgentStatus]) -> None:
        self._session.details_changed()

    def pending_changed(self, params: AgentInput | None, pending: list[PendingRequest]) -> None:
        self._session.pending_changed(pending)

    async def ready_to_hand_over(self) -> None:
        return None

    @property
    def hand_over_words(self) -> str:
        return "moving the turn to a child run"

    def hand_over(self, params: AgentInput, carried: Scratchpad) -> NoReturn:
        raise TurnOutgrewSession(carried)

    async def report(
        self,
        params: AgentInput,
        *,
        result: AgentResult | None,
        error: BaseException | None,
        usage: TokenUsage,
    ) -> None:
        return None  # the turn returns to its session (`InlineTurn.report`)


class InlineTurn:
    """Runs one turn as a task of the session workflow; `report()` once it has ended."""

    def __init__(
        self, host: HostSession, agent_input: AgentInput, events: RunEvents | None = None
    ) -> None:
        self.agent = AgentLoop(SessionTurnHost(host), events)
        """The turn's loop: the session hands people's signals and updates to it; it publishes
        on the session's stream (`events`, for this turn)."""
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
