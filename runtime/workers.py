"""Assemble the Temporal workers of this application.

One worker on the main task queue runs `AgentWorkflow`, `call_model` and every tool without a
queue of its own; a tool registered with `task_queue="gpu"` (say) gets a worker on that queue.
A `local=True` tool runs as a local activity in the worker whose workflow task calls it, so it
must be registered beside the workflows: it is, since `ToolOptions` refuses `local` with a
`task_queue`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Interceptor, PollerBehaviorSimpleMaximum, Replayer, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.chat_model import ChatModel
from activities.context_cache import ContextCache
from activities.model_activity import ModelActivities
from activities.tool_activities import tool_activities
from activities.worker_policy import worker_policy_activity
from contracts.policy import WorkerPolicy
from tools.catalog import CATALOG, Catalog
from tools.definition import Tool
from tools.memory_store import MemoryStore
from workflows.agent_workflow import AgentWorkflow
from workflows.input_guard import InputCountGuard
from workflows.session_workflow import SessionWorkflow
from workflows.worker_catalog import CatalogInterceptor

if TYPE_CHECKING:
    from activities.mcp_servers import McpServers


PROJECT_MODULES = ("contracts", "loop", "tools", "activities", "workflows", "runtime")
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
      the throughput (BENCHMARKS.md, levers). In either mode the sandbox checks calls
      (`datetime.now()`, I/O) only in modules it imports itself, so the replay tests, not the
      sandbox, are what keeps the loop's code deterministic.
    - `eager_activities`: ask the server to hand an activity scheduled by a workflow task
      straight back to this worker (used only when the server allows it).
    """

    max_cached_workflows: int = 1000
    max_concurrent_workflow_tasks: int | None = None
    max_concurrent_activities: int | None = None
    workflow_task_pollers: int | None = None
    activity_task_pollers: int | None = None
    sandbox: Literal["passthrough", "default", "off"] = "passthrough"
    eager_activities: bool = True

    def worker_options(self) -> dict[str, Any]:
        """Keyword arguments of `Worker` for these settings."""
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


def workflow_interceptors(catalog: Catalog) -> list[Interceptor]:
    """What every worker (and replayer) of this application's workflows needs: more payloads
    than one refused (`InputCountGuard`), and the catalog the workflows read."""
    return [InputCountGuard(), CatalogInterceptor(catalog)]


def build_replayer(catalog: Catalog = CATALOG, **options: Any) -> Replayer:
    """A `Replayer` of this application's workflows as `build_workers` runs them: the same
    interceptors and catalog, the pydantic data converter (`options` go to `Replayer`)."""
    return Replayer(
        workflows=[AgentWorkflow, SessionWorkflow],
        data_converter=pydantic_data_converter,
        interceptors=workflow_interceptors(catalog),
        **options,
    )


def build_workers(
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
) -> list[Worker]:
    """The workers to run: the main one first, then one per extra tool task queue.

    `catalog` is what the runs may name: each tool becomes an activity named after it, and
    the workflows these workers run read the same catalog (`workflows.worker_catalog`).

    On shutdown, in-flight activities get `drain_seconds` to finish before they are cancelled.
    With `mcp` (the MCP servers, opened and closed by the caller), the main worker also runs
    `list_mcp_tools` and every `<server>__<tool>` call.
    `memory` is the long-term memory store the memory tools use (opened and closed by the
    caller); without one they answer that memory is not set up.
    `tuning`: cache, slots, pollers, sandbox (see `WorkerTuning`).
    """
    # Activities heartbeat every second; sending each one (not the SDK's default of one per
    # 0.8 x heartbeat timeout) lets a cancellation reach a running activity within a second.
    throttle = timedelta(seconds=1)
    options = (tuning or WorkerTuning()).worker_options()

    def worker(
        queue: str, activities: Sequence[Callable[..., Any]], workflows: Sequence[type] = ()
    ) -> Worker:
        return Worker(
            client,
            task_queue=queue,
            workflows=workflows,
            activities=activities,
            graceful_shutdown_timeout=timedelta(seconds=drain_seconds),
            max_heartbeat_throttle_interval=throttle,
            default_heartbeat_throttle_interval=throttle,
            # A killed worker's sticky queue is given up on after 3 s (default 10 s), so its
            # runs move to another worker sooner.
            sticky_queue_schedule_to_start_timeout=timedelta(seconds=3),
            # More payloads than a handler takes fail the run or are refused, never the task.
            interceptors=workflow_interceptors(catalog),
            **options,
        )

    mcp_calls: list[Callable[..., Any]] = []
    if mcp is not None:  # imported only then: the SDK takes half a second to import
        from activities.mcp_activities import mcp_activities

        mcp_calls = mcp_activities(mcp)
    by_queue: dict[str, list[Tool]] = defaultdict(list)
    for item in catalog.tools.all():
        by_queue[item.options.task_queue or task_queue].append(item)
    main = worker(
        task_queue,
        [
            ModelActivities(model, cache=context_cache).call_model,
            worker_policy_activity(policy or WorkerPolicy()),
            *mcp_calls,
            *tool_activities(by_queue.pop(task_queue, []), workspace, memory),
        ],
        [AgentWorkflow, SessionWorkflow],
    )
    return [
        main,
        *(
            worker(queue, tool_activities(tools, workspace, memory))
            for queue, tools in by_queue.items()
        ),
    ]
