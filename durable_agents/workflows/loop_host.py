"""`LoopHost`: what differs between the workflows that host the agent loop (`AgentLoop`).

The loop is the same wherever it runs; its host decides the few things that depend on where:

- `RunHost` (`workflows/run_host.py`): the loop is a run of its own, `AgentWorkflow`
  (standalone, a sub-agent, a plan step, or a session's turn that is its own child run);
- `SessionTurnHost` (`workflows/inline_turn.py`): the loop is a session's turn, inside the
  session's own history.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn, Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_input import AgentInput
    from durable_agents.contracts.agent_result import AgentResult
    from durable_agents.contracts.agent_status import AgentStatus
    from durable_agents.contracts.approvals import PendingRequest
    from durable_agents.contracts.model_io import CachedConversation
    from durable_agents.contracts.scratchpad import Scratchpad
    from durable_agents.contracts.usage import TokenUsage


class TurnOutgrewSession(Exception):
    """A turn's history grew past its continue-as-new threshold inside the session, which
    cannot continue-as-new while a `send` update waits for the turn: the rest of the turn runs
    as a child run of its own, from `carried` (as a run continues-as-new)."""

    def __init__(self, carried: Scratchpad) -> None:
        super().__init__("the turn outgrew the session's history")
        self.carried = carried


class LoopHost(Protocol):
    """Where a loop runs (see the module docstring)."""

    def check_start(self, params: AgentInput) -> None:
        """Refuse a start whose links the host cannot confirm (a run: Temporal's knowledge of
        its parent; a hosted turn: its session built them)."""
        ...

    def conversation(self, params: AgentInput) -> CachedConversation:
        """The worker's context-cache entry the loop's model calls build on."""
        ...

    def announce(self, memo: dict[str, object]) -> None:
        """The loop started: what the Web UI shows of it (a run's memo; a turn shows nothing of
        its own)."""
        ...

    def show(self, status: Callable[[], AgentStatus]) -> None:
        """The loop's state changed: refresh the Web UI's current details (`status` computes
        the loop's, for a host that shows it)."""
        ...

    def pending_changed(self, params: AgentInput | None, pending: list[PendingRequest]) -> None:
        """The loop's calls waiting for a person changed: tell whoever shows them (a session, a
        parent run)."""
        ...

    async def ready_to_hand_over(self) -> None:
        """Before the loop hands the rest of itself over (history full): wait until it can."""
        ...

    @property
    def hand_over_words(self) -> str:
        """How the log says it hands over (`continuing as new`)."""
        ...

    def hand_over(self, params: AgentInput, carried: Scratchpad) -> NoReturn:
        """Hand the rest of the loop, `carried`, to a fresh history."""
        ...

    async def report(
        self,
        params: AgentInput,
        *,
        result: AgentResult | None,
        error: BaseException | None,
        usage: TokenUsage,
    ) -> None:
        """The loop ended: tell whoever waits for it by signal (a session, for a turn that is
        its own run); a hosted turn returns to its host instead."""
        ...
