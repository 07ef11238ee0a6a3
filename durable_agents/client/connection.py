"""Reaching the Temporal server and the run a command names, with failures in plain words.

Every RPC failure the user can cause (an unreachable server, a wrong namespace, an unknown
workflow id, a run that already ended) becomes a typed `durable_agents.errors.AgentError` with
one readable line (`error_for_rpc`).

The client opens the payload store the worker uses (`AGENT_PAYLOAD_STORE`, the same default:
runtime/payload_store.py), so a result or an event stored outside history reads like any other.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable
from contextlib import AsyncExitStack
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final, TypeVar

from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
)
from temporalio.converter import ExternalStorage
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.principals import DEFAULT_TENANT
from durable_agents.errors import AgentError, RunEnded, RunNotFound, TemporalError
from durable_agents.loop import search_attributes
from durable_agents.runtime.payload_store import external_storage
from durable_agents.runtime.settings import EnvironmentSettings
from durable_agents.runtime.temporal_client import (
    DEFAULT_ADDRESS,
    TemporalConnection,
    connect_with_settings,
    load_connection,
    payload_store_of,
)
from durable_agents.runtime.tracing import tracing_interceptors
from durable_agents.workflows.search_attributes import AGENT_TENANT

WorkflowRun = WorkflowHandle[Any, AgentResult]
"""A temporalio handle on an `AgentWorkflow` run whose result decodes as `AgentResult` (what
`durable_agents.client.RunHandle` wraps)."""
CONNECT_TIMEOUT = timedelta(seconds=5)
QUERY_TIMEOUT = timedelta(seconds=5)
"""How long a query may wait for a worker to answer; queries need a running worker."""
ResultT = TypeVar("ResultT")

_STORES: ContextVar[AsyncExitStack | None] = ContextVar("payload_stores", default=None)
_PROCESS_STORES = AsyncExitStack()
"""Payload stores opened outside `with_payload_stores` (a server's client): open for the life
of the process."""


@dataclass(frozen=True)
class Target:
    """Where the runs live: server address, namespace and the task queue new runs go to, and
    how to reach them (API key, TLS: `connection`, from the settings and their profile)."""

    address: str
    namespace: str
    task_queue: str
    settings: EnvironmentSettings = field(repr=False, compare=False)
    connection: TemporalConnection = field(repr=False, compare=False)
    configured_address: str = field(default=DEFAULT_ADDRESS, repr=False, compare=False)
    configured_namespace: str = field(default="default", repr=False, compare=False)

    @classmethod
    def resolve(
        cls,
        settings: EnvironmentSettings,
        address: str | None = None,
        namespace: str | None = None,
        task_queue: str | None = None,
    ) -> Target:
        """The settings' connection (environment, then `TEMPORAL_PROFILE` of the config file,
        as the `temporal` CLI reads them) with the command line's `--address`, `--namespace`
        and `--task-queue` on top. A wrong profile or config file raises `SettingsError`."""
        configured = load_connection(settings)
        connection = configured.with_target(address, namespace)
        return cls(
            address=connection.address or DEFAULT_ADDRESS,
            namespace=connection.namespace,
            task_queue=task_queue or settings.task_queue,
            settings=settings,
            connection=connection,
            configured_address=configured.address or DEFAULT_ADDRESS,
            configured_namespace=configured.namespace,
        )

    @property
    def payload_store(self) -> bool:
        """Whether the worker of these settings stores large payloads outside history (the
        same rule the worker applies: `AGENT_PAYLOAD_STORE`, else on for a local server), so
        a run may carry texts over today's limits (`contracts.payload_limits`)."""
        return payload_store_of(self.settings).on

    def command_prefix(self) -> str:
        """`agent` plus the options another shell (with the same environment) needs to reach
        the same server, so printed commands can be pasted as they are."""
        words = ["agent"]
        if self.address != self.configured_address:
            words += ["--address", self.address]
        if self.namespace != self.configured_namespace:
            words += ["--namespace", self.namespace]
        return shlex.join(words)


def _connect_reason(error: BaseException) -> str:
    """The useful part of the SDK's connection error (it embeds a Rust debug dump)."""
    text = str(error)
    if "ConnectionRefused" in text or "Connection refused" in text:
        return "connection refused"
    if "dns error" in text:
        return "unknown host"
    if "timed out" in text.lower() or "elapsed" in text.lower():
        return f"no answer within {CONNECT_TIMEOUT.total_seconds():g} s"
    first = text.removeprefix("Failed client connect: ").splitlines()[0] if text else ""
    return first[:160] or type(error).__name__


async def with_payload_stores(work: Awaitable[ResultT]) -> ResultT:
    """`work` (a command), then close the payload stores `connect` opened for it (an S3 store
    holds a connection pool)."""
    async with AsyncExitStack() as stack:
        token = _STORES.set(stack)
        try:
            return await work
        finally:
            _STORES.reset(token)


async def open_store(target: Target) -> ExternalStorage | None:
    """The payload store the target's settings name (None: off), open until the command ends
    (`with_payload_stores`), or for the life of the process."""
    spec = payload_store_of(target.settings)
    if not spec.on:
        return None
    stack = _STORES.get() or _PROCESS_STORES
    return await stack.enter_async_context(external_storage(spec))


async def connect(target: Target) -> Client:
    """A client with the pydantic data converter (the same JSON the workflow and the Temporal
    CLI use; encrypted with `AGENT_PAYLOAD_KEY` when it is set, as the worker does; large
    payloads in the worker's payload store, `AGENT_PAYLOAD_STORE`), with the target's API key
    and TLS, failing within about five seconds when the server is not there."""
    storage = await open_store(target)
    try:
        return await asyncio.wait_for(
            connect_with_settings(
                target.settings,
                target.connection.with_target(target.address, target.namespace),
                interceptors=tracing_interceptors(target.settings),  # OTEL_ENABLED
                connect_timeout=CONNECT_TIMEOUT,
                external_storage=storage,
            ),
            timeout=CONNECT_TIMEOUT.total_seconds() + 1,
        )
    except (RuntimeError, RPCError, OSError, TimeoutError) as error:
        reason = (
            f"no answer within {CONNECT_TIMEOUT.total_seconds():g} s"
            if isinstance(error, TimeoutError)
            else _connect_reason(error)
        )
        raise TemporalError(
            f"cannot reach the Temporal server at {target.address} ({reason}); "
            "start one (`make run`) or pass --address / set TEMPORAL_ADDRESS or TEMPORAL_PROFILE"
        ) from None


def explain_rpc(error: RPCError, workflow_id: str | None = None, doing: str = "") -> AgentError:
    """The typed error of an RPC failure, in one line; `doing` says what the caller was trying
    to do: `RunNotFound`, `RunEnded`, else `TemporalError`."""
    message = error.message or str(error)
    prefix = f"{doing}: " if doing else ""
    if error.status == RPCStatusCode.NOT_FOUND and workflow_id and "workflow" in message.lower():
        if "already completed" in message:
            return RunEnded(
                f"{prefix}run {workflow_id!r} has already ended", workflow_id=workflow_id
            )
        return RunNotFound(
            f"no run with workflow id {workflow_id!r} ({message})", workflow_id=workflow_id
        )
    if error.status == RPCStatusCode.NOT_FOUND and "namespace" in message.lower():
        return TemporalError(f"{prefix}{message} (pass --namespace or set TEMPORAL_NAMESPACE)")
    if error.status == RPCStatusCode.UNAVAILABLE:
        return TemporalError(f"{prefix}the Temporal server is unavailable ({message})")
    if error.status == RPCStatusCode.DEADLINE_EXCEEDED:
        return TemporalError(f"{prefix}no answer in time ({message})")
    return TemporalError(f"{prefix}{message}", workflow_id=workflow_id)


STARTER_MEMO: Final = "starter"
"""The memo key of the principal that started a run or a session through a server."""
TENANT_MEMO: Final = search_attributes.TENANT_MEMO
"""The memo key `AgentClient` records a run's or a session's tenant under at its start (read
until the run's first workflow task upserts `AgentTenant`, and where that search attribute is
not registered)."""


def not_found(workflow_id: str) -> RunNotFound:
    """`RunNotFound` for `workflow_id`, word for word as the Temporal server's answer about a
    workflow that does not exist (`explain_rpc`): what another tenant's run answers."""
    return RunNotFound(
        f"no run with workflow id {workflow_id!r} (workflow not found for ID: {workflow_id})",
        workflow_id=workflow_id,
    )


UNREADABLE_TENANT = "?"
"""The tenant of a run whose memo this client cannot read and that has no `AgentTenant`: no
tenant's name (they match `TENANT_PATTERN`), so only an admin reaches it."""


async def run_tenant(description: WorkflowExecution) -> str:
    """The tenant of a run or a session (described or listed): its `AgentTenant` search
    attribute, else the tenant its starter recorded in its memo, else the default tenant (a
    run started without one, by the Temporal CLI, before its first workflow task)."""
    tenant = description.typed_search_attributes.get(AGENT_TENANT)
    if tenant:
        return tenant
    try:
        recorded = (await description.memo()).get(TENANT_MEMO)
    except Exception:  # a memo this client cannot decode (encrypted with a key it lacks)
        return UNREADABLE_TENANT
    return recorded if isinstance(recorded, str) and recorded else DEFAULT_TENANT


async def describe(
    client: Client, workflow_id: str
) -> tuple[WorkflowRun, WorkflowExecutionDescription]:
    """The handle of the latest run with `workflow_id` and its description, or a clear error
    when there is no such run."""
    handle = client.get_workflow_handle(workflow_id, result_type=AgentResult)
    try:
        return handle, await handle.describe()
    except RPCError as error:
        raise explain_rpc(error, workflow_id) from None


def status_name(description: WorkflowExecutionDescription) -> str:
    """`RUNNING`, `COMPLETED`, `FAILED`, ... as the Temporal CLI prints it."""
    status = description.status
    return status.name if status is not None else "UNKNOWN"


def is_running(description: WorkflowExecutionDescription) -> bool:
    return description.status == WorkflowExecutionStatus.RUNNING
