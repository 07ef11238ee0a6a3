"""Small gaps of issue 23, item 6: the tool registry refuses a second tool of the same name, and a
tool with its own `task_queue` is run by the worker of that queue, not by the main worker (a
second `Worker` on that queue, started by the test). Real worker, real Temporal server, scripted
model.

(Two sub-agents called in one reply running in parallel is tested in `tests/test_callees.py`:
`test_two_sub_agents_in_one_reply_run_in_parallel_with_their_own_state`.)
"""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from pydantic import BaseModel
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.runtime.workers import build_workers
from durable_agents.tools.catalog import CATALOG
from durable_agents.tools.definition import Tool, tool
from durable_agents.tools.registry import ToolRegistry
from testkit.eventually import eventually
from tests.catalog import TEST_CATALOG
from tests.scripted_model import ScriptedChatModel, call, text, tool_calls

# -- the registry --------------------------------------------------------------------------------


class NoArgs(BaseModel):
    pass


@tool()
async def twin(args: NoArgs) -> str:
    """The first tool named twin."""
    return "first"


@tool(name="twin")
async def other_twin(args: NoArgs) -> str:
    """A second tool named twin."""
    return "second"


def test_the_registry_refuses_a_second_tool_of_the_same_name() -> None:
    registry = ToolRegistry([twin])
    with pytest.raises(ValueError, match="a tool named 'twin' is already registered"):
        registry.register(other_twin)
    assert [t.function for t in registry.all()] == [twin.function]  # the first one stays


def test_a_registry_built_with_twins_is_refused() -> None:
    with pytest.raises(ValueError, match="'twin' is already registered"):
        ToolRegistry([twin, other_twin])


def test_a_catalog_extended_with_a_builtin_name_is_refused() -> None:
    @tool(name="calculator")
    async def fake_calculator(args: NoArgs) -> str:
        """Not the calculator."""
        return "0"

    with pytest.raises(ValueError, match="'calculator' is already registered"):
        CATALOG.extended(tools=[fake_calculator])


# -- a tool on its own task queue ----------------------------------------------------------------

ran_on: list[str] = []
"""The task queue of each `gpu_job` attempt, as the activity saw it."""


class JobArgs(BaseModel):
    job: str


def gpu_tool(queue: str) -> Tool:
    @tool(name="gpu_job", task_queue=queue)
    async def gpu_job(args: JobArgs) -> str:
        """Run a job on the GPU workers."""
        ran_on.append(activity.info().task_queue)
        return f"{args.job} done on {activity.info().task_queue}"

    return gpu_job


async def scheduled_queue(handle: WorkflowHandle[object, object], activity_type: str) -> str:
    history = await handle.fetch_history()
    for event in history.events:
        attrs = event.activity_task_scheduled_event_attributes
        if (
            event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and attrs.activity_type.name == activity_type
        ):
            return attrs.task_queue.name
    raise AssertionError(f"no {activity_type} activity scheduled yet")


async def test_a_tool_with_its_own_task_queue_runs_on_that_queues_worker(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    main_queue = f"agents-test-{uuid.uuid4()}"
    gpu_queue = f"gpu-test-{uuid.uuid4()}"
    job = gpu_tool(gpu_queue)
    catalog = TEST_CATALOG.extended(tools=[job])
    model = ScriptedChatModel()
    model.enqueue(tool_calls(call("gpu_job", {"job": "render"}, id="g1")), text("rendered"))
    async with AsyncExitStack() as stack:
        # The application's workers: the main one (and its cache-affinity one), and one for
        # the gpu queue, which the test starts later to see who runs the call.
        workers = build_workers(
            temporal_env.client,
            task_queue=main_queue,
            model=model,
            catalog=catalog,
            workspace=tmp_path,
        )
        [gpu_worker] = [w for w in workers if w.task_queue == gpu_queue]
        for worker in workers:
            if worker is not gpu_worker:
                await stack.enter_async_context(worker)
        handle = await temporal_env.client.start_workflow(
            "AgentWorkflow",
            {"prompt": "render it", "tools": ["gpu_job"]},
            id=f"gpu-{uuid.uuid4()}",
            task_queue=main_queue,
            result_type=AgentResult,
        )
        queue = await eventually(
            lambda: scheduled_queue(handle, "gpu_job"), what="gpu_job scheduled"
        )
        assert queue == gpu_queue
        # Scheduled, but the main worker does not run it: nobody polls the gpu queue yet.
        description = await handle.describe()
        assert ran_on == [] and description.raw_description.pending_activities

        await stack.enter_async_context(gpu_worker)  # a second worker, on the gpu queue
        result = await handle.result()

    assert ran_on == [gpu_queue]
    assert result.answer == "rendered"
    [step] = result.steps
    assert (step.status, step.observation) == ("ok", f"render done on {gpu_queue}")
