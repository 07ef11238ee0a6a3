"""`SessionHandle`: a `SessionWorkflow` (a conversation that remembers its turns), by id. A
message starts it when it does not exist yet (update-with-start), so a session needs no
separate start unless it runs with settings of its own (`AgentClient.start_session`).

    session = agents.session("support-42", task_queue="shop")
    turn = await session.send("Where is my order?")       # the turn's TurnResult
    async for event in session.events(after=None): ...     # turn after turn, until it ends

What waits for a person in the running turn is answered through the session as through a run
(`pending`, `approve`, `reject`, `reply`, `steer`): the session forwards each to its turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from temporalio.client import Client, WorkflowUpdateHandle
from temporalio.service import RPCError

from durable_agents.client.connection import (
    QUERY_TIMEOUT,
    STARTER_MEMO,
    TENANT_MEMO,
    WorkflowRun,
    explain_rpc,
)
from durable_agents.client.limits import Started
from durable_agents.client.run_handle import STARTED_VIA, RunHandle, Steered
from durable_agents.client.workflow_calls import answered_query, send_message, signal
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.events import SESSION_TERMINAL_EVENT_TYPES, AgentEvent
from durable_agents.contracts.principals import DecisionMaker, Role
from durable_agents.contracts.session import RunningTurn, SessionStatus, TurnResult
from durable_agents.errors import InvalidInput


class SessionHandle:
    """A session by id, on `task_queue` when a message starts it, marked as started `via` a
    kind of server; with `owner`, only a session that kind of server started can be used
    (`NotStartedHere`). `admitted`: the principal's turn to start something
    (`AgentClient.admitted`): each message is checked against its limits."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        *,
        task_queue: str | None,
        via: str | None = None,
        owner: str | None = None,
        tenant: str | None = None,
        maker: DecisionMaker | None = None,
        roles: frozenset[Role] | None = None,
        start_input: Mapping[str, Any] | None = None,
        admitted: Callable[[], AbstractAsyncContextManager[Started]] | None = None,
    ) -> None:
        self.client = client
        self.id = session_id
        self.task_queue = task_queue
        self.via = via
        self.run_id: str | None = None
        """The first run's id, when `AgentClient.start_session` started it."""
        self._calls = RunHandle(
            client, session_id, owner=owner, tenant=tenant, maker=maker, roles=roles
        )
        """The session's own workflow, for what waits in its running turn."""
        self.start_input = dict(start_input or {})
        """The `SessionInput` its first message starts it with (its tenant and starter)."""
        self._admitted = admitted

    def __repr__(self) -> str:
        return f"SessionHandle({self.id!r})"

    async def send_nowait(
        self, text: str, *, by: str | None = None
    ) -> WorkflowUpdateHandle[TurnResult]:
        """Queue a message (the session starts, marked as `via`'s, if it does not exist yet);
        returns once the session took it: `await handle.result()` is the turn's answer.
        `MessageRefused` when the session refuses it (it ended, too many wait);
        `LimitExceeded` when the principal's limits allow no turn now (nothing is sent)."""
        if self.task_queue is None:
            raise InvalidInput(
                "task_queue: name the task queue the session runs on", field="task_queue"
            )
        if self._calls.owner is not None or self._calls.tenant is not None:
            await self._check_ours()
        memo = {STARTED_VIA: self.via} if self.via is not None else {}
        if "tenant" in self.start_input:
            memo[TENANT_MEMO] = self.start_input["tenant"]
        if "starter" in self.start_input:  # whose limits its turns count against
            memo[STARTER_MEMO] = self.start_input["starter"]
        if self._calls.maker is not None:
            by = self._calls.maker.name
        if self._admitted is None:
            return await send_message(
                self.client, self.id, self.task_queue, text, by, memo or None, self.start_input
            )
        async with self._admitted() as started:  # a turn starts: within the limits
            update = await send_message(
                self.client, self.id, self.task_queue, text, by, memo or None, self.start_input
            )
            started(self.id, False)
        return update

    async def _check_ours(self) -> None:
        """An existing session must be ours (this server's, this tenant's: `RunNotFound` as a
        missing one when it is another tenant's); none yet: it starts with the message."""
        try:
            await self._calls.workflow.describe()
        except RPCError:
            return  # (none yet, or the send names why)
        await self._calls.describe()

    async def send(self, text: str, *, by: str | None = None) -> TurnResult:
        """Send a message and wait for its turn's answer (its `error` says when it failed)."""
        update = await self.send_nowait(text, by=by)
        try:
            return await update.result()
        except RPCError as error:
            raise explain_rpc(error, self.id, "waiting for the turn") from None

    def turn(self, message_id: str) -> WorkflowUpdateHandle[TurnResult]:
        """The `send` update a message was taken with (`send_nowait(...).id`), to wait for its
        answer later."""
        return self.client.get_workflow_handle(self.id).get_update_handle(
            message_id, result_type=TurnResult
        )

    @property
    def workflow(self) -> WorkflowRun:
        """The session's temporalio handle (its stream, for `StreamWatch`)."""
        return self._calls.workflow

    async def query_status(
        self, timeout: float = QUERY_TIMEOUT.total_seconds()
    ) -> SessionStatus | None:
        """Its `status` query's answer (`status` without describing it first, for a caller
        that polls), or None when no worker answers within `timeout`."""
        await self._calls._in_tenant()
        return await answered_query(self.workflow, "status", SessionStatus, timeout)

    async def turn_status(
        self, timeout: float = QUERY_TIMEOUT.total_seconds()
    ) -> AgentStatus | None:
        """The status of its running inline turn (the `turn_status` query: phase, usage,
        pending, steps, as a run's `status`), or None when no worker answers in `timeout`."""
        await self._calls._in_tenant()
        return await answered_query(self.workflow, "turn_status", AgentStatus, timeout)

    def turn_run(self, running: RunningTurn) -> RunHandle:
        """Where a running turn (`SessionStatus.running`) lives: the session itself for an
        inline turn, its child run for a turn run as one (`turns: child`, or a turn that
        outgrew the session); its calls wait and its events are there. A child run is reached
        as the session is (its tenant, decisions signed alike), whatever server started it."""
        if running.inline or running.workflow_id == self.id:
            return self._calls
        calls = self._calls
        return RunHandle(
            self.client,
            running.workflow_id,
            tenant=calls.tenant,
            maker=calls.maker,
            roles=calls.roles,
        )

    async def status(self) -> SessionStatus:
        """Its state, turns, queue, running turn, pending requests and usage."""
        await self._calls.describe()
        try:
            return await self._calls.workflow.query(
                "status", result_type=SessionStatus, rpc_timeout=QUERY_TIMEOUT
            )
        except RPCError as error:
            raise explain_rpc(error, self.id) from None

    async def events(self, *, after: int | None = None) -> AsyncIterator[AgentEvent]:
        """The session's own events after offset `after` (None: from the first), live, until
        it ends (`session_ended`). A turn that runs as a child run is named by `turn_started`
        / `turn_moved` (`child_workflow_id`): its events are on that run's stream
        (`AgentClient.run(child_workflow_id).events()`)."""
        async for event in self._calls.events(after=after, stop_at=SESSION_TERMINAL_EVENT_TYPES):
            yield event

    async def stream_offset(self) -> int:
        """Where the session's event stream ends now (0 before its first message)."""
        return await self._calls.stream_offset()

    async def pending(self) -> list[PendingRequest]:
        """What waits for a person in the running turn ([] once the session ended)."""
        return await self._calls.pending()

    async def next_request(self) -> PendingRequest | None:
        """The first request the running turn waits on a person for (None: the session ended)."""
        return await self._calls.next_request()

    async def approve(
        self,
        call_id: str,
        *,
        digest: str | None = None,
        edit: dict[str, Any] | None = None,
        by: str | None = None,
        comment: str | None = None,
    ) -> HumanDecision:
        """As `RunHandle.approve`, for a call of the running turn."""
        return await self._calls.approve(call_id, digest=digest, edit=edit, by=by, comment=comment)

    async def reject(
        self, call_id: str, *, reason: str | None = None, by: str | None = None
    ) -> HumanDecision:
        """As `RunHandle.reject`, for a call of the running turn."""
        return await self._calls.reject(call_id, reason=reason, by=by)

    async def reply(self, call_id: str, text: str, *, by: str | None = None) -> PendingRequest:
        """As `RunHandle.reply`, for a question of the running turn."""
        return await self._calls.reply(call_id, text, by=by)

    async def steer(self, text: str, *, by: str | None = None) -> Steered:
        """A message the running turn's model reads at its next call."""
        return await self._calls.steer(text, by=by)

    async def end(self, *, by: str | None = None) -> None:
        """End the session (its running turn finishes first)."""
        await self._calls.describe()
        await signal(self._calls.workflow, "end", {"by": by}, "cannot end the session")
