"""`AgentClient`: start agent runs and sessions on a temporalio `Client`, and reach those that run.

    agents = AgentClient(client)
    run = await agents.start(shop, "Order 17 shirts", id="order-1", task_queue="shop")
    request = await run.next_request()
    await run.approve(request.call_id, digest=request.args_digest)
    result = await run.result()

A run is the same `AgentWorkflow` every interface starts (the CLI, the HTTP API, the MCP and A2A
gateways all go through this class), so the Temporal CLI and Web UI show it like any other. The
client's data converter is made to read and write the engine's pydantic payloads (its codec and
external storage kept): an application's own `Client.connect(...)` works as it is.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator, Collection, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from temporalio.client import Client, WorkflowExecution, WorkflowHistory
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from durable_agents.client.connection import (
    QUERY_TIMEOUT,
    STARTER_MEMO,
    TENANT_MEMO,
    explain_rpc,
    not_found,
    run_tenant,
)
from durable_agents.client.limits import Started, StartLimits
from durable_agents.client.run_handle import STARTED_VIA, RunHandle, started_by
from durable_agents.client.run_input import run_input
from durable_agents.client.session_handle import SessionHandle
from durable_agents.client.workflow_calls import (
    SESSION_TYPE,
    WORKFLOW_TYPE,
    answered_query,
    run_details,
    run_summary,
)
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.principals import DecisionMaker, Principal
from durable_agents.contracts.session import SessionResult, SessionStatus
from durable_agents.errors import InvalidInput, RunAlreadyStarted
from durable_agents.runtime.temporal_client import engine_client
from durable_agents.tools.agents import AgentProfiles
from durable_agents.workflows.search_attributes import AGENT_TENANT, AGENT_TOKENS

if TYPE_CHECKING:
    from durable_agents.agent import Agent


@dataclass(frozen=True)
class ListedRun:
    """A run or a session as a list shows it (`AgentClient.list_runs`, `AgentClient.listed`):
    what visibility knows of it, without asking its workflow anything."""

    workflow_id: str
    workflow_type: str
    """`AgentWorkflow` (a run) or `SessionWorkflow` (a session)."""
    status: str
    """The execution status: `RUNNING`, `COMPLETED`, `FAILED`, `CANCELED`, ..."""
    start_time: str
    """ISO 8601."""
    close_time: str | None
    tenant: str
    run_id: str = ""
    """This execution's run id (a run continued as new is listed once per execution)."""
    starter: str | None = None
    """The principal that started it (its memo's `starter`; None: started without one)."""
    started_via: str | None = None
    """The kind of server that started it (its memo's `started_via`: `serve`, `mcp`, ...)."""
    tokens: int | None = None
    """Its `AgentTokens` search attribute, where the namespace keeps it (`tokens_used`
    reads the tokens of one that does not)."""

    SHOWN: ClassVar[tuple[str, ...]] = (
        "workflow_id",
        "workflow_type",
        "status",
        "start_time",
        "close_time",
        "tenant",
    )
    """The fields `GET /v1/runs` shows of each."""

    @property
    def started_at(self) -> float:
        """When it started, in epoch seconds."""
        return datetime.fromisoformat(self.start_time).timestamp()

    def shown(self) -> dict[str, Any]:
        """The `SHOWN` fields, as JSON (a row of `GET /v1/runs`)."""
        return {name: getattr(self, name) for name in self.SHOWN}

    @classmethod
    async def of(cls, execution: WorkflowExecution) -> ListedRun:
        """The listed (or described) `execution` (its memo read with this client's data
        converter: one it cannot decode names no starter)."""
        status = execution.status.name if execution.status is not None else "UNKNOWN"
        try:
            memo = await execution.memo()
        except Exception:  # a memo this client cannot decode (encrypted with a key it lacks)
            memo = {}
        starter, via = memo.get(STARTER_MEMO), memo.get(STARTED_VIA)
        return cls(
            workflow_id=execution.id,
            workflow_type=execution.workflow_type,
            status=status,
            start_time=execution.start_time.isoformat(),
            close_time=execution.close_time.isoformat() if execution.close_time else None,
            tenant=await run_tenant(execution),
            run_id=execution.run_id,
            starter=starter if isinstance(starter, str) else None,
            started_via=via if isinstance(via, str) else None,
            tokens=execution.typed_search_attributes.get(AGENT_TOKENS),
        )


def _of_types(types: Collection[str]) -> str:
    """The visibility filter on the workflow types (`AgentWorkflow`, `SessionWorkflow`)."""
    return "(" + " OR ".join(f'WorkflowType="{name}"' for name in types) + ")"


class AgentClient:
    """Runs and sessions on one Temporal client (see the module docstring).

    - `task_queue`: where runs and sessions start when a call names none;
    - `via`: the kind of server this client serves (`mcp`, `a2a`, `serve`): what it starts is
      marked so in its memo, and (with `only_own`, the default) only what it started can be
      reached through it (`NotStartedHere`);
    - `profiles`: the agent profiles `start` may name (the worker's catalog's);
    - `payload_store`: the worker stores large payloads outside history, so inputs may be
      larger than the history's limits allow (`contracts.payload_limits`);
    - `principal`: who asks (a server's authenticated caller, `as_principal`): runs and
      sessions start in its tenant, started by it (`AgentSettings.tenant`, `starter`); only
      its tenant's are reached (another tenant's is `RunNotFound`, as a missing one; an admin
      reaches every tenant's); its decisions are signed by it (`HumanDecision.maker`); its
      `PrincipalLimits` are checked at every start: of a run, of a session, of a session's
      turn (`LimitExceeded`, before anything starts; `client.limits`);
    - `limits`: the `StartLimits` that count the principals' starts (default: a new one)."""

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str | None = None,
        via: str | None = None,
        profiles: AgentProfiles | None = None,
        payload_store: bool = False,
        only_own: bool = True,
        principal: Principal | None = None,
        limits: StartLimits | None = None,
    ) -> None:
        self.client = engine_client(client)
        self.task_queue = task_queue
        self.via = via
        self.owner = via if only_own else None
        """Whose runs this client may reach (None: any in the namespace)."""
        self.profiles = profiles if profiles is not None else AgentProfiles()
        self.payload_store = payload_store
        self.principal = principal
        self.tenant = principal.tenant if principal and not principal.may("admin") else None
        """The only tenant this client reaches (None: every tenant's runs)."""
        self.roles = principal.roles if principal is not None else None
        """The principal's roles, checked against a call's `ApprovalRequirement.role`."""
        self.maker = (
            DecisionMaker(name=principal.name, tenant=principal.tenant, self_declared=False)
            if principal is not None
            else None
        )
        self.limits = limits if limits is not None else StartLimits()
        """The principal's limits, checked at every start (`client.limits`); shared with every
        copy `as_principal` makes, so the process's recent starts are counted once."""

    def as_principal(self, principal: Principal | None, *, signs: bool = True) -> AgentClient:
        """This client as `principal` sees it (None: as it is); cheap, for one request.
        `signs=False`: a stand-in that names nobody (a server without credentials, a shared
        token) does not sign decisions, so the `by` a person gives stays, self-declared."""
        if principal is None:
            return self
        agents = copy.copy(self)
        AgentClient.__init__(
            agents,
            self.client,
            task_queue=self.task_queue,
            via=self.via,
            profiles=self.profiles,
            payload_store=self.payload_store,
            only_own=self.owner is not None,
            principal=principal,
            limits=self.limits,
        )
        if not signs:
            agents.maker = None
        return agents

    def stamped(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """A run's or a session's input in the principal's tenant, started by it: a
        non-admin naming another tenant is `InvalidInput` (an admin may name any)."""
        stamped = dict(payload)
        if self.principal is None:
            return stamped
        asked = stamped.get("tenant")
        if asked is not None and asked != self.principal.tenant and self.tenant is not None:
            raise InvalidInput(
                f"tenant: {self.principal.name!r} may start runs only in its tenant "
                f"{self.principal.tenant!r}",
                field="tenant",
            )
        stamped["tenant"] = asked or self.principal.tenant
        stamped["starter"] = self.principal.name
        return stamped

    def __repr__(self) -> str:
        return f"AgentClient(namespace={self.client.namespace!r}, via={self.via!r})"

    @property
    def started_by(self) -> str:
        """What started the runs, in the words the Web UI's run details use."""
        return started_by(self.via) if self.via else "`AgentClient`"

    def _queue(self, task_queue: str | None) -> str:
        queue = task_queue or self.task_queue
        if not queue:
            raise InvalidInput(
                "task_queue: name the task queue a worker serving the agent polls",
                field="task_queue",
            )
        return queue

    def workflow_input(
        self, agent: Agent[Any] | str | None, prompt: str, settings: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The `AgentWorkflow` input of a run of `agent` (an `Agent` defined in code, a profile
        of `profiles` by name, or None: the default agent) with `settings` on top, checked:
        `InvalidInput` names the field at fault. Only the given fields are sent, so the
        worker's defaults (its model, every tool) still apply."""
        if agent is None or isinstance(agent, str):
            return run_input(prompt, agent, settings, self.profiles, self.payload_store)
        try:
            made = agent.input(prompt, **settings)
        except ValueError as error:
            raise InvalidInput(str(error)) from None
        return made.model_dump(mode="json", exclude_unset=True)

    async def start(
        self,
        agent: Agent[Any] | str | None,
        prompt: str,
        *,
        id: str | None = None,
        task_queue: str | None = None,
        by: str | None = None,
        **settings: Any,
    ) -> RunHandle:
        """Start a run of `agent` on `prompt` (`settings`: any run setting of `AgentInput`,
        `max_iterations=5`, `mode="plan_and_execute"`, ...) as workflow `id` (default: a new
        one) on `task_queue`. `by` names who started it (the Web UI's run details).
        `InvalidInput`, `RunAlreadyStarted`, `TemporalError`."""
        payload = self.workflow_input(agent, prompt, settings)
        return await self.start_input(payload, id=id, task_queue=task_queue, by=by)

    async def start_input(
        self,
        payload: Mapping[str, Any],
        *,
        id: str | None = None,
        task_queue: str | None = None,
        by: str | None = None,
        memo: Mapping[str, str] | None = None,
        summary: str | None = None,
        details: str | None = None,
    ) -> RunHandle:
        """Start a run with a workflow input already made (`workflow_input`, an HTTP body);
        `memo`: more entries for the run's memo (the A2A gateway records its task's context);
        `summary` / `details`: what the Web UI shows of it (default: from the prompt)."""
        workflow_id = id or f"{self.via or 'agent'}-{uuid.uuid4().hex[:10]}"
        payload = self.stamped(payload)
        run_id = await self._start(
            WORKFLOW_TYPE,
            payload,
            workflow_id,
            task_queue,
            "run",
            static_summary=summary or run_summary(payload["prompt"]),
            static_details=details or run_details(payload, by, self.started_by),
            memo=memo,
        )
        handle = self.run(workflow_id)
        handle.run_id = run_id
        return handle

    def run(self, workflow_id: str, *, run_id: str | None = None) -> RunHandle:
        """A handle on the run `workflow_id` (nothing is asked of the server yet: a run that
        does not exist is `RunNotFound` at the first call); `run_id`: its history is read from
        that run on (`RunHandle.history_events`), e.g. a child run a parent's history names."""
        return RunHandle(
            self.client,
            workflow_id,
            run_id=run_id,
            owner=self.owner,
            tenant=self.tenant,
            maker=self.maker,
            roles=self.roles,
        )

    async def open_run(self, workflow_id: str) -> RunHandle:
        """The run `workflow_id`, checked now: `RunNotFound`, `NotStartedHere`."""
        run = self.run(workflow_id)
        await run.describe()
        return run

    def session(self, session_id: str, *, task_queue: str | None = None) -> SessionHandle:
        """The session `session_id`; its first message starts it on `task_queue`."""
        return SessionHandle(
            self.client,
            session_id,
            task_queue=task_queue or self.task_queue,
            via=self.via,
            owner=self.owner,
            tenant=self.tenant,
            maker=self.maker,
            roles=self.roles,
            start_input=self.stamped({}),
            admitted=self.admitted,
        )

    async def start_session(
        self,
        settings: Mapping[str, Any],
        *,
        id: str | None = None,
        task_queue: str | None = None,
    ) -> SessionHandle:
        """Start a session with its own settings (`SessionInput`: the agent's settings, memory,
        turns inline or as child runs) before its first message. `RunAlreadyStarted` when a
        session with that id runs."""
        session_id = id or f"session-{uuid.uuid4().hex[:10]}"
        run_id = await self._start(
            SESSION_TYPE, self.stamped(settings), session_id, task_queue, "session"
        )
        session = self.session(session_id, task_queue=self._queue(task_queue))
        session.run_id = run_id
        return session

    async def list_runs(self, *, limit: int = 100) -> list[ListedRun]:
        """The newest runs and sessions this client reaches (its principal's tenant, by the
        `AgentTenant` search attribute), at most `limit`. `TemporalError` when the namespace
        cannot filter by it (not registered: a worker registers it at start)."""
        query = _of_types((WORKFLOW_TYPE, SESSION_TYPE))
        if self.tenant is not None:
            query += f' AND {AGENT_TENANT.name}="{self.tenant}"'
        listed: list[ListedRun] = []
        try:
            async for execution in self.client.list_workflows(query, limit=limit):
                listed.append(await ListedRun.of(execution))
        except RPCError as error:
            raise explain_rpc(error, None, "cannot list the runs") from None
        return listed

    async def listed(
        self,
        query: str | None = None,
        *,
        types: Collection[str] = (WORKFLOW_TYPE, SESSION_TYPE),
        limit: int | None = None,
    ) -> AsyncIterator[ListedRun]:
        """Each run and session of `types` that a visibility `query` lists
        (`"WorkflowId STARTS_WITH 'a2a-'"`, `"ExecutionStatus = 'Running'"`; None: every
        one), newest first, at most `limit`, within this client's tenant: checked run by run
        (its `AgentTenant`, else its memo's tenant), so it works where the namespace has no
        `AgentTenant` registered. A run continued as new is listed once per execution.
        `TemporalError` when the server refuses the query."""
        where = _of_types(types) + (f" AND ({query})" if query else "")
        count = 0
        try:
            async for execution in self.client.list_workflows(where):
                if limit is not None and count >= limit:
                    return
                run = await ListedRun.of(execution)
                if self.tenant is not None and run.tenant != self.tenant:
                    continue
                count += 1
                yield run
        except RPCError as error:
            raise explain_rpc(error, None, "cannot list the runs") from None

    async def tokens_used(self, run: ListedRun, *, timeout: timedelta = QUERY_TIMEOUT) -> int:
        """The model tokens a listed run or session has used: its `AgentTokens` where kept;
        else a running one's `status` query usage (0 when no worker answers in `timeout`), a
        completed one's result usage; 0 for anything else (failed, cancelled, ...). Another
        tenant's is `RunNotFound`, as from every other call of a client with a tenant."""
        if self.tenant is not None and run.tenant != self.tenant:
            raise not_found(run.workflow_id)  # another tenant's: as a missing one
        if run.tokens is not None:
            return run.tokens
        session = run.workflow_type == SESSION_TYPE
        workflow = self.client.get_workflow_handle(
            run.workflow_id,
            run_id=run.run_id or None,
            result_type=SessionResult if session else AgentResult,
        )
        if run.status == "RUNNING":
            seconds = timeout.total_seconds()
            status: SessionStatus | AgentStatus | None = (
                await answered_query(workflow, "status", SessionStatus, seconds)
                if session
                else await answered_query(workflow, "status", AgentStatus, seconds)
            )
            return status.usage.total_tokens if status is not None else 0
        if run.status != "COMPLETED":
            return 0
        try:
            result: SessionResult | AgentResult = await workflow.result(follow_runs=False)
        except Exception:  # continued as new, or not a result of ours: nothing to count
            return 0
        return result.usage.total_tokens

    def admitted(self) -> AbstractAsyncContextManager[Started]:
        """The principal's turn to start one run, session or turn: `LimitExceeded` when its
        limits allow none now (`client.limits`), else held until the start is made (call the
        function it gives with the workflow id started)."""
        return self.limits.admitted(self)

    async def histories(
        self, query: str, *, limit: int | None = None
    ) -> AsyncIterator[tuple[WorkflowExecution, WorkflowHistory]]:
        """Every run a visibility `query` lists (within this client's tenant), at most `limit`
        runs, with its history: what `agent replay` replays and `agent audit` reads."""
        if self.tenant is not None:
            query = f'({query}) AND {AGENT_TENANT.name}="{self.tenant}"'
        try:
            async for execution in self.client.list_workflows(query, limit=limit):
                handle = self.client.get_workflow_handle(execution.id, run_id=execution.run_id)
                yield execution, await handle.fetch_history()
        except RPCError as error:
            raise explain_rpc(error, None, "cannot read the histories") from None

    def memo(self, tenant: str | None) -> dict[str, str]:
        """What a run or a session this client starts records in its memo: the server that
        started it (`started_via`), its tenant (`stamped`) and the principal that started it
        (`starter`: what `client.limits` counts a principal's runs by)."""
        memo = {STARTED_VIA: self.via} if self.via else {}
        if tenant is not None:
            memo[TENANT_MEMO] = tenant
        if self.principal is not None:
            memo[STARTER_MEMO] = self.principal.name
        return memo

    async def _start(
        self,
        workflow_type: str,
        workflow_input: dict[str, Any],
        workflow_id: str,
        task_queue: str | None,
        what: str,
        static_summary: str | None = None,
        static_details: str | None = None,
        memo: Mapping[str, str] | None = None,
    ) -> str | None:
        """Start `workflow_type` marked as `via`'s, within the principal's limits
        (`admitted`): its first run id, or the typed error (`what`: `run` or `session`, as the
        messages name it)."""
        queue = self._queue(task_queue)
        try:
            async with self.admitted() as started:
                handle = await self.client.start_workflow(
                    workflow_type,
                    workflow_input,
                    id=workflow_id,
                    task_queue=queue,
                    memo={**(memo or {}), **self.memo(workflow_input.get("tenant"))} or None,
                    static_summary=static_summary,
                    static_details=static_details,
                )
                started(workflow_id, workflow_type == WORKFLOW_TYPE)
        except WorkflowAlreadyStartedError:
            noun = "a run with workflow id" if what == "run" else "a session with id"
            raise RunAlreadyStarted(
                f"{noun} {workflow_id!r} is already running", workflow_id=workflow_id
            ) from None
        except RPCError as error:
            raise explain_rpc(error, None, f"cannot start the {what}") from None
        return handle.result_run_id
