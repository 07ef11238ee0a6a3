"""`RunHost`: the agent loop as a run of its own (`AgentWorkflow`): standalone, a sub-agent, a
plan step, or a session's turn that is its own child run.

Its links are confirmed against Temporal, its state is its run's memo and current details, its
pending calls are told to its session or parent by signal, it continues-as-new when its history
is full, and a session's turn tells the session how it ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_input import AgentInput
    from durable_agents.contracts.agent_result import AgentResult
    from durable_agents.contracts.agent_status import AgentStatus
    from durable_agents.contracts.agents import ChildPending
    from durable_agents.contracts.approvals import PendingRequest
    from durable_agents.contracts.errors import INVALID_INPUT
    from durable_agents.contracts.model_io import CachedConversation
    from durable_agents.contracts.principals import DEFAULT_TENANT
    from durable_agents.contracts.scratchpad import Scratchpad
    from durable_agents.contracts.usage import TokenUsage
    from durable_agents.loop.input_validation import link_problem
    from durable_agents.loop.search_attributes import search_state
    from durable_agents.loop.status import current_details
    from durable_agents.workflows.delegation import signal_parent
    from durable_agents.workflows.model_gateway import run_conversation
    from durable_agents.workflows.refusals import refuse
    from durable_agents.workflows.run_events import RunEvents
    from durable_agents.workflows.search_attributes import SearchAttributeKeeper
    from durable_agents.workflows.session_link import pending_report, signal_session, turn_report


class RunHost:
    """A `LoopHost` for a loop that is its own run."""

    def __init__(self, events: RunEvents | None = None) -> None:
        self._events = events or RunEvents.off()
        self._entry: CachedConversation | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._reports = 0
        self._search = SearchAttributeKeeper()
        self._tenant = DEFAULT_TENANT

    def check_start(self, params: AgentInput) -> None:
        self._tenant = params.tenant
        info = workflow.info()
        problem = link_problem(
            params,
            parent_id=info.parent.workflow_id if info.parent else None,
            continued=info.continued_run_id is not None,
        )
        if problem:
            refuse(f"invalid AgentWorkflow input: {problem}", INVALID_INPUT)

    def conversation(self, params: AgentInput) -> CachedConversation:
        """The run's own entry, carried across continue-as-new."""
        if self._entry is None:
            self._entry = params.resume_context or run_conversation()
        return self._entry

    def announce(self, memo: dict[str, object]) -> None:
        workflow.upsert_memo(memo)

    def show(self, status: Callable[[], AgentStatus]) -> None:
        """The current details, and the search attributes operators filter by."""
        now = status()
        workflow.set_current_details(current_details(now))
        label, digest = now.definition, now.definition_digest
        defined = (label, digest) if label and digest else None
        self._search.keep(
            search_state(now.phase, now.pending, now.usage.total_tokens, self._tenant, defined)
        )

    def pending_changed(self, params: AgentInput | None, pending: list[PendingRequest]) -> None:
        """Reports are numbered: their signals go out concurrently and may arrive out of order,
        and the receiver keeps only the newest."""
        if params is None:
            return
        self._reports += 1
        if params.session is not None:
            shown = pending_report(params.session, pending, self._reports)
            self._spawn(signal_session(params.session, "turn_pending", shown))
        if params.parent is not None:
            report = ChildPending(
                call_key=params.parent.call_key,
                workflow_id=workflow.info().workflow_id,
                token=params.parent.token,
                sequence=self._reports if params.parent.token else 0,
                pending=pending,
            )
            self._spawn(signal_parent(params.parent, report))

    async def ready_to_hand_over(self) -> None:
        """The stream's subscribers are released first (they follow to the next run): a
        waiting poll is a handler that would otherwise never finish."""
        await self._events.close()

    @property
    def hand_over_words(self) -> str:
        return "continuing as new"

    def hand_over(self, params: AgentInput, carried: Scratchpad) -> NoReturn:
        carry = {"resume": carried, "resume_context": self._entry, "stream": self._events.state()}
        workflow.continue_as_new(params.model_copy(update=carry))

    async def report(
        self,
        params: AgentInput,
        *,
        result: AgentResult | None,
        error: BaseException | None,
        usage: TokenUsage,
    ) -> None:
        """A session's turn that is its own run tells its session how it ended."""
        if params.session is not None:
            report = turn_report(params.session, result=result, error=error, usage=usage)
            await signal_session(params.session, "turn_finished", report)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
