"""Assemble the Temporal workers of this application.

One worker on the main task queue runs `AgentWorkflow`, `call_model` and every tool without a
queue of its own; a tool registered with `task_queue="gpu"` (say) gets a worker on that queue.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio.client import Client
from temporalio.worker import Worker

from activities.chat_model import ChatModel
from activities.context_cache import ContextCache
from activities.model_activity import ModelActivities
from activities.tool_activities import tool_activities
from activities.worker_policy import worker_policy_activity
from contracts.policy import WorkerPolicy
from tools.definition import Tool
from tools.memory_store import MemoryStore
from tools.registry import ToolRegistry
from workflows.agent_workflow import AgentWorkflow
from workflows.session_workflow import SessionWorkflow

if TYPE_CHECKING:
    from activities.mcp_servers import McpServers


def build_workers(
    client: Client,
    *,
    task_queue: str,
    model: ChatModel,
    registry: ToolRegistry,
    workspace: Path,
    drain_seconds: float = 0.0,
    context_cache: ContextCache | None = None,
    policy: WorkerPolicy | None = None,
    mcp: McpServers | None = None,
    memory: MemoryStore | None = None,
) -> list[Worker]:
    """The workers to run: the main one first, then one per extra tool task queue.

    On shutdown, in-flight activities get `drain_seconds` to finish before they are cancelled.
    With `mcp` (the MCP servers, opened and closed by the caller), the main worker also runs
    `list_mcp_tools` and every `<server>__<tool>` call.
    `memory` is the long-term memory store the memory tools use (opened and closed by the
    caller); without one they answer that memory is not set up.
    """
    # Activities heartbeat every second; sending each one (not the SDK's default of one per
    # 0.8 x heartbeat timeout) lets a cancellation reach a running activity within a second.
    throttle = timedelta(seconds=1)

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
        )

    mcp_calls: list[Callable[..., Any]] = []
    if mcp is not None:  # imported only then: the SDK takes half a second to import
        from activities.mcp_activities import mcp_activities

        mcp_calls = mcp_activities(mcp)
    by_queue: dict[str, list[Tool]] = defaultdict(list)
    for item in registry.all():
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
