"""Assemble the Temporal workers of this application.

One worker on the main task queue runs `AgentWorkflow`, `call_model` and every tool without a
queue of its own; a tool registered with `task_queue="gpu"` (say) gets a worker on that queue.
A `local=True` tool runs as a local activity in the worker whose workflow task calls it, so it
must be registered beside the workflows: it is, since `ToolOptions` refuses `local` with a
`task_queue`.
"""

from __future__ import annotations

import os
import socket
import sys
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from temporalio import workflow
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import (
    Interceptor,
    PatchActivationInput,
    PollerBehaviorSimpleMaximum,
    Replayer,
    Worker,
    WorkerDeploymentConfig,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from durable_agents.activities.cache_affinity import CacheAffinity
from durable_agents.activities.chat_model import ChatModel
from durable_agents.activities.code_sandbox import run_script_step
from durable_agents.activities.context_cache import ContextCache
from durable_agents.activities.definition_record import definition_recorder
from durable_agents.activities.maker_signature import check_decision_maker, sign_decision_makers
from durable_agents.activities.model_activity import ModelActivities
from durable_agents.activities.tool_activities import tool_activities
from durable_agents.activities.turn_forwarding import forward_to_turn
from durable_agents.activities.worker_policy import worker_policy_activity
from durable_agents.contracts.command_server import CommandServer
from durable_agents.contracts.policy import WorkerPolicy
from durable_agents.runtime.inbound_payloads import worker_client
from durable_agents.runtime.settings import EnvironmentSettings
from durable_agents.tools.catalog import CATALOG, Catalog
from durable_agents.tools.definition import Tool
from durable_agents.tools.memory_store import MemoryStore
from durable_agents.workflows.agent_workflow import AgentWorkflow
from durable_agents.workflows.definitions import DEFINITION_MARKER
from durable_agents.workflows.input_guard import InputCountGuard
from durable_agents.workflows.refusals import LARGE_PAYLOADS_MARKER
from durable_agents.workflows.search_attributes import SEARCH_ATTRIBUTES_MARKER
from durable_agents.workflows.session_workflow import SessionWorkflow
from durable_agents.workflows.worker_catalog import CatalogInterceptor

if TYPE_CHECKING:
    from durable_agents.activities.mcp_servers import McpServers


PROJECT_MODULES = ("durable_agents",)
"""This project's packages, for `WorkerTuning(sandbox="passthrough")`."""


@dataclass(frozen=True)
class WorkerTuning:
    """How the workers use the machine (see BENCHMARKS.md for what each setting measured).

    - `max_cached_workflows`: runs kept in the sticky cache (0: every workflow task replays
      the run's whole history).
    - `max_concurrent_workflow_tasks`, `max_concurrent_activities`: slots (None: SDK default).
    - `workflow_task_pollers`, `activity_task_pollers`: long polls at once (None: SDK default).
    - `sandbox`: `passthrough` (default: this project's packages are imported once and shared
      by every run), `default` (the SDK's: each run re-imports the modules it was not told to
      pass through) or `off` (no sandbox). The workflows already import everything they use
      through `imports_passed_through`, so `default` only re-imports the two workflow modules
      themselves for each run, which cost about 50 KB of memory per cached run and a sixth of
      the throughput (BENCHMARKS.md, levers). In either mode the sandbox checks module calls
      (`datetime.now()`, `os`) only in modules it imports itself; what it still checks in
      passed-through code is the builtins (`open`, `input`) and imports made while a workflow
      task runs. `tests/test_workflow_code_is_deterministic.py` scans the workflow code's
      sources for the rest, and the replay tests check its behaviour. `off` saves the worker
      about a quarter of an evicted run's replay but does not lift what bounds a waiting
      fleet here, the server (docs/fleet.md), so the default keeps the sandbox.
    - `eager_activities`: ask the server to hand an activity scheduled by a workflow task
      straight back to this worker (used only when the server allows it).
    - `cache_affinity`: `auto` (default) or `on`: a second worker on a task queue of this
      process alone runs `call_model` too, and every model reply names that queue, so a run's
      next model call can go to the worker whose context cache holds its conversation. `on`
      sends it there always; `auto` only once the worker saw its server dispatch without
      eagerness or the run saw a call miss on another worker (docs/fleet.md,
      `loop.cache_affinity`); `off` polls no queue of its own. True and False mean on and off.
    """

    max_cached_workflows: int = 1000
    max_concurrent_workflow_tasks: int | None = None
    max_concurrent_activities: int | None = None
    workflow_task_pollers: int | None = None
    activity_task_pollers: int | None = None
    sandbox: Literal["passthrough", "default", "off"] = "passthrough"
    eager_activities: bool = True
    cache_affinity: CacheAffinity | bool = "auto"

    @property
    def affinity(self) -> CacheAffinity:
        """`cache_affinity` as auto, on or off."""
        value = self.cache_affinity
        if isinstance(value, bool):
            return "on" if value else "off"
        if value not in ("auto", "on", "off"):
            raise ValueError(f"cache_affinity must be auto, on or off, got {value!r}")
        return value

    def worker_options(self) -> dict[str, Any]:
        """Keyword arguments of `Worker` for these settings (`cache_affinity` is not one)."""
        options: dict[str, Any] = {
            "max_cached_workflows": self.max_cached_workflows,
            "max_concurrent_workflow_tasks": self.max_concurrent_workflow_tasks,
            "max_concurrent_activities": self.max_concurrent_activities,
            "disable_eager_activity_execution": not self.eager_activities,
        }
        if self.workflow_task_pollers is not None:
            options["workflow_task_poller_behavior"] = PollerBehaviorSimpleMaximum(
                self.workflow_task_pollers
            )
        if self.activity_task_pollers is not None:
            options["activity_task_poller_behavior"] = PollerBehaviorSimpleMaximum(
                self.activity_task_pollers
            )
        if self.sandbox == "passthrough":
            options["workflow_runner"] = SandboxedWorkflowRunner(
                restrictions=SandboxRestrictions.default.with_passthrough_modules(*PROJECT_MODULES)
            )
        elif self.sandbox == "off":
            from temporalio.worker import UnsandboxedWorkflowRunner

            options["workflow_runner"] = UnsandboxedWorkflowRunner()
        elif self.sandbox != "default":
            raise ValueError(f"sandbox must be default, passthrough or off, got {self.sandbox!r}")
        return options


def worker_queue_name(task_queue: str) -> str:
    """A task queue of this worker process alone (host, pid and a random part: a restarted
    worker, whose cache is empty, gets a new one), polled only for `call_model`."""
    return f"{task_queue}@{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


VERSIONING_BEHAVIOR: dict[type, VersioningBehavior] = {
    AgentWorkflow: VersioningBehavior.PINNED,
    SessionWorkflow: VersioningBehavior.AUTO_UPGRADE,
}
"""What each workflow does when a new version becomes current (docs/fleet.md): a run finishes
on the build it started on (pinned: its code never changes under it, however long it waits);
a session, open for days, moves to the current build at its next workflow task (its code
changes are behind `workflow.patched`, so the new build replays its history)."""


def deployment_config(settings: EnvironmentSettings) -> WorkerDeploymentConfig | None:
    """The Worker Deployment version `AGENT_DEPLOYMENT_NAME` and `AGENT_BUILD_ID` name (None:
    an unversioned worker)."""
    if settings.deployment_name is None or settings.build_id is None:
        return None
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(settings.deployment_name, settings.build_id),
        use_worker_versioning=True,
    )


def declare_versioning(versioned: bool) -> None:
    """Give the workflows their `VERSIONING_BEHAVIOR`, or none for an unversioned worker.

    Not in `@workflow.defn`: the SDK sends a declared behaviour with every workflow task
    completion, and the server refuses it from a worker that is not versioned ("versioning
    behavior cannot be specified without deployment options being set with versioned mode"),
    so each run would retry its first workflow task forever under `make run`. The definition
    is the class's, shared by every worker of the process: one process is versioned or not."""
    for cls, behavior in VERSIONING_BEHAVIOR.items():
        defn = workflow._Definition.must_from_class(cls)
        object.__setattr__(defn, "versioning_behavior", behavior if versioned else None)


def workflow_interceptors(catalog: Catalog) -> list[Interceptor]:
    """What every worker (and replayer) of this application's workflows needs: more payloads
    than one refused (`InputCountGuard`), and the catalog the workflows read."""
    return [InputCountGuard(), CatalogInterceptor(catalog)]


def configured_patches(catalog: Catalog) -> dict[str, bool]:
    """The patches whose first answer in a new run depends on the worker's configuration:
    keep the agent search attributes (its server has them), take the raised payload limits
    (it stores large payloads outside history); and one a new run no longer takes:
    `agent-definition`, the definition echoed, which `agent-definition-once` replaced (only a
    history that holds its marker answers yes, `workflows.definitions`)."""
    return {
        SEARCH_ATTRIBUTES_MARKER: catalog.search_attributes,
        LARGE_PAYLOADS_MARKER: catalog.large_payloads,
        DEFINITION_MARKER: False,
    }


def patch_activation(catalog: Catalog) -> Callable[[PatchActivationInput], bool]:
    """The worker's `patch_activation_callback`: how a new run first answers
    `workflow.patched` (every other patch: yes, as without a callback). The SDK asks it only
    on a live task, for a patch the run has not answered yet; the answer is then kept (a yes
    as a marker in history), and replay, on any worker or a plain `Replayer`, reads it from
    the history. This is how workflow code asks `patched` unconditionally while the worker's
    configuration decides new runs (tests/test_replay_configurations.py)."""
    configured = configured_patches(catalog)
    return lambda asked: configured.get(asked.patch_id, True)


REPLAY_BUILD_ID = "durable-agents-replay"
"""The build id `build_replayer` gives its `Replayer` unless told another. Without one the SDK
computes the default: a hash of the bytecode of every module loaded, about a third of a first
replay's CPU in a fresh process (`agent replay`, the replay tests, bench target 5), for an id a
replay never uses."""


def build_replayer(catalog: Catalog = CATALOG, **options: Any) -> Replayer:
    """A `Replayer` of this application's workflows as `build_workers` runs them: the same
    interceptors and catalog, the pydantic data converter (`options` go to `Replayer`; its
    `build_id` is `REPLAY_BUILD_ID` unless given)."""
    return Replayer(
        workflows=[AgentWorkflow, SessionWorkflow],
        data_converter=pydantic_data_converter,
        interceptors=workflow_interceptors(catalog),
        **{"build_id": REPLAY_BUILD_ID, **options},
    )


class EngineOptions(TypedDict, total=False):
    """The optional keyword arguments of `engine_workers` and `build_workers`."""

    drain_seconds: float
    context_cache: ContextCache | None
    policy: WorkerPolicy | None
    mcp: McpServers | None
    memory: MemoryStore | None
    tuning: WorkerTuning | None
    deployment: WorkerDeploymentConfig | None
    large_payloads: bool | None
    deps: Any


@dataclass(frozen=True)
class EngineWorkers:
    """What the engine's workers run, before any `Worker` exists: what `build_workers` makes
    its workers of, and what `DurableAgentsPlugin` adds to an application's own `Worker`.

    - `catalog`: what the runs may name, as the workflows will read it.
    - `workflows` and `activities`: the main task queue's (the workflows, `call_model`, the
      worker policy, code mode, session forwarding, MCP calls and every tool without a queue
      of its own).
    - `queues`: the other task queues this process polls and their activities (its own
      cache-affinity queue, with `call_model` alone, and one per tool `task_queue`).
    - `options`: the `Worker` keyword arguments every one of them takes.
    """

    catalog: Catalog
    workflows: list[type]
    activities: list[Callable[..., Any]]
    queues: dict[str, list[Callable[..., Any]]]
    options: dict[str, Any]


def engine_workers(
    client: Client,
    *,
    task_queue: str,
    model: ChatModel,
    catalog: Catalog,
    workspace: Path,
    drain_seconds: float = 0.0,
    context_cache: ContextCache | None = None,
    policy: WorkerPolicy | None = None,
    mcp: McpServers | None = None,
    memory: MemoryStore | None = None,
    tuning: WorkerTuning | None = None,
    deployment: WorkerDeploymentConfig | None = None,
    large_payloads: bool | None = None,
    deps: Any = None,
) -> EngineWorkers:
    """The engine's workflows and activities on `task_queue`, and the queues beside it (see
    `build_workers` for the arguments; `deps` is handed to every tool as `ctx.deps`)."""
    if large_payloads is None:
        large_payloads = client.data_converter.external_storage is not None
    catalog = catalog.with_large_payloads(large_payloads or catalog.large_payloads)
    if catalog.command_server is None:  # the commands people paste reach this worker's server
        catalog = catalog.with_command_server(
            CommandServer(address=client.service_client.config.target_host,
                          namespace=client.namespace)
        )  # fmt: skip
    tuning = tuning or WorkerTuning()
    if deployment is not None and tuning.sandbox == "default":
        raise ValueError(  # the sandbox's own copy of a workflow class would lack its behaviour
            "a versioned worker (AGENT_DEPLOYMENT_NAME) needs sandbox passthrough or off"
        )
    declare_versioning(deployment is not None)
    mcp_calls: list[Callable[..., Any]] = []
    if mcp is not None:  # imported only then: the SDK takes half a second to import
        from durable_agents.activities.mcp_activities import mcp_activities

        mcp_calls = mcp_activities(mcp)
    by_queue: dict[str, list[Tool]] = defaultdict(list)
    for item in catalog.tools.all():
        by_queue[item.options.task_queue or task_queue].append(item)
    identity = worker_queue_name(task_queue)
    own_queue = identity if tuning.affinity != "off" else None
    models = ModelActivities(
        model, cache=context_cache, worker_queue=own_queue, identity=identity,
        affinity=tuning.affinity,
    )  # fmt: skip

    def tools_of(queue: str) -> list[Callable[..., Any]]:
        items = by_queue.pop(queue, [])
        return tool_activities(
            items, workspace, memory, catalog.large_payloads, models.keep_output, deps
        )

    activities: list[Callable[..., Any]] = [
        models.call_model,
        worker_policy_activity(policy or WorkerPolicy()),
        definition_recorder(catalog.tools),
        check_decision_maker,
        sign_decision_makers,
        run_script_step,
        forward_to_turn,
        *mcp_calls,
        *tools_of(task_queue),
    ]
    queues = {own_queue: [models.call_model]} if own_queue is not None else {}
    queues.update({queue: tools_of(queue) for queue in list(by_queue)})
    return EngineWorkers(
        catalog=catalog,
        workflows=[AgentWorkflow, SessionWorkflow],
        activities=activities,
        queues=queues,
        options=with_telemetry(
            engine_worker_options(catalog, tuning, drain_seconds, deployment), client
        ),
    )


def engine_worker_options(
    catalog: Catalog,
    tuning: WorkerTuning,
    drain_seconds: float,
    deployment: WorkerDeploymentConfig | None,
) -> dict[str, Any]:
    """The `Worker` keyword arguments of every engine worker."""
    # Activities heartbeat every second; sending each one (not the SDK's default of one per
    # 0.8 x heartbeat timeout) lets a cancellation reach a running activity within a second.
    throttle = timedelta(seconds=1)
    return {
        "graceful_shutdown_timeout": timedelta(seconds=drain_seconds),
        "max_heartbeat_throttle_interval": throttle,
        "default_heartbeat_throttle_interval": throttle,
        # A killed worker's sticky queue is given up on after 3 s (default 10 s), so its
        # runs move to another worker sooner.
        "sticky_queue_schedule_to_start_timeout": timedelta(seconds=3),
        # More payloads than a handler takes fail the run or are refused, never the task.
        "interceptors": workflow_interceptors(catalog),
        "deployment_config": deployment,
        "patch_activation_callback": patch_activation(catalog),
        **tuning.worker_options(),
    }


def with_telemetry(options: dict[str, Any], client: Client) -> dict[str, Any]:
    """`options` with the telemetry interceptors and sandbox passthrough, once
    `runtime.telemetry.install` set telemetry up in this process (OTEL_ENABLED: the module,
    and OpenTelemetry, are imported only then)."""
    telemetry = sys.modules.get("durable_agents.runtime.telemetry")
    if telemetry is None or not telemetry.active():
        return options
    return telemetry.worker_options(options, client.config()["interceptors"])


def build_workers(
    client: Client,
    *,
    task_queue: str,
    model: ChatModel,
    catalog: Catalog,
    workspace: Path,
    **options: Unpack[EngineOptions],
) -> list[Worker]:
    """The workers to run: the main one first, then one per other task queue of the process.

    `catalog` is what the runs may name: each tool becomes an activity named after it, and
    the workflows these workers run read the same catalog (`workflows.worker_catalog`).

    On shutdown, in-flight activities get `drain_seconds` to finish before they are cancelled.
    With `mcp` (the MCP servers, opened and closed by the caller), the main worker also runs
    `list_mcp_tools` and every `<server>__<tool>` call.
    `memory` is the long-term memory store the memory tools use (opened and closed by the
    caller); without one they answer that memory is not set up.
    `tuning`: cache, slots, pollers, sandbox, cache affinity (see `WorkerTuning`).
    `deployment`: the Worker Deployment version every worker of the process joins (None:
    unversioned). `large_payloads`: an external payload store is on (runtime/payload_store),
    so the runs' size limits are the raised ones (`contracts.payload_limits`): the catalog
    the workflows read says so, and the tool activities know it. None: whether the client's
    data converter stores payloads externally. `deps`: the application's dependencies, each
    tool's `ctx.deps`.

    The workers decode with `inbound_payloads.worker_client(client)`: a payload that cannot be
    decoded never fails a workflow task.
    """
    client = worker_client(client)
    engine = engine_workers(
        client, task_queue=task_queue, model=model, catalog=catalog, workspace=workspace,
        **options,
    )  # fmt: skip
    main = Worker(
        client,
        task_queue=task_queue,
        workflows=engine.workflows,
        activities=engine.activities,
        **engine.options,
    )
    return [
        main,
        *(
            Worker(client, task_queue=queue, activities=activities, **engine.options)
            for queue, activities in engine.queues.items()
        ),
    ]
