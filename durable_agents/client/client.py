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
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from temporalio.client import Client, WorkflowExecution, WorkflowHistory
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from durable_agents.client.connection import STARTER_MEMO, TENANT_MEMO, explain_rpc, run_tenant
from durable_agents.client.run_handle import STARTED_VIA, RunHandle, started_by
from durable_agents.client.run_input import run_input
from durable_agents.client.session_handle import SessionHandle
from durable_agents.client.workflow_calls import (
    SESSION_TYPE,
    WORKFLOW_TYPE,
    run_details,
    run_summary,
)
from durable_agents.contracts.principals import DecisionMaker, Principal
from durable_agents.errors import InvalidInput, RunAlreadyStarted
from durable_agents.runtime.temporal_client import engine_client
from durable_agents.tools.agents import AgentProfiles
from durable_agents.workflows.search_attributes import AGENT_TENANT

if TYPE_CHECKING:
    from durable_agents.agent import Agent


@dataclass(frozen=True)
class ListedRun:
    """A run or a session as a list shows it."""

    workflow_id: str
    workflow_type: str
    status: str
    start_time: str
    close_time: str | None
    tenant: str

    @classmethod
    async def of(cls, execution: WorkflowExecution) -> ListedRun:
        status = execution.status.name if execution.status is not None else "UNKNOWN"
        return cls(
            workflow_id=execution.id,
            workflow_type=execution.workflow_type,
            status=status,
            start_time=execution.start_time.isoformat(),
            close_time=execution.close_time.isoformat() if execution.close_time else None,
            tenant=await run_tenant(execution),
        )


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
      reaches every tenant's); its decisions are signed by it (`HumanDecision.maker`)."""

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

    def run(self, workflow_id: str) -> RunHandle:
        """A handle on the run `workflow_id` (nothing is asked of the server yet: a run that
        does not exist is `RunNotFound` at the first call)."""
        return RunHandle(
            self.client,
            workflow_id,
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
        query = f'(WorkflowType="{WORKFLOW_TYPE}" OR WorkflowType="{SESSION_TYPE}")'
        if self.tenant is not None:
            query += f' AND {AGENT_TENANT.name}="{self.tenant}"'
        listed: list[ListedRun] = []
        try:
            async for execution in self.client.list_workflows(query, limit=limit):
                listed.append(await ListedRun.of(execution))
        except RPCError as error:
            raise explain_rpc(error, None, "cannot list the runs") from None
        return listed

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
        (`starter`: what `servers.limits` counts a principal's runs by)."""
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
        """Start `workflow_type` marked as `via`'s: its first run id, or the typed error
        (`what`: `run` or `session`, as the messages name it)."""
        try:
            handle = await self.client.start_workflow(
                workflow_type,
                workflow_input,
                id=workflow_id,
                task_queue=self._queue(task_queue),
                memo={**(memo or {}), **self.memo(workflow_input.get("tenant"))} or None,
                static_summary=static_summary,
                static_details=static_details,
            )
        except WorkflowAlreadyStartedError:
            noun = "a run with workflow id" if what == "run" else "a session with id"
            raise RunAlreadyStarted(
                f"{noun} {workflow_id!r} is already running", workflow_id=workflow_id
            ) from None
        except RPCError as error:
            raise explain_rpc(error, None, f"cannot start the {what}") from None
        return handle.result_run_id
