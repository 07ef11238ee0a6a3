"""An A2A task is its run (issue 35 item 5): `agent a2a` as a real subprocess, killed (SIGKILL)
in the middle of a task, and a new gateway process that finishes it, all through `a2a-sdk`'s
own client, in front of the real dev server and the in-process worker (the real `openai`
client against the fake model server)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from a2a.types.a2a_pb2 import GetTaskRequest, ListTasksRequest, Task, TaskState
from google.protobuf import json_format
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.server_process import ServerProcess, server_process
from tests.test_a2a_gateway import a2a_client, last_task, stream, user_message


@asynccontextmanager
async def a2a_gateway(
    agent: AgentHarness, env: WorkflowEnvironment
) -> AsyncIterator[ServerProcess]:
    async with server_process(agent, env, "a2a") as gateway:
        yield gateway


async def task_on(port: int, task_id: str) -> Task:
    async with a2a_client(port, streaming=False) as client:
        return await client.get_task(GetTaskRequest(id=task_id))


async def test_a_gateway_killed_while_its_task_waits_and_another_finishes_it(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "sum.txt", "content": "425"}, id="w1")),
        fake.text("I saved 425 to sum.txt."),
    )
    async with a2a_gateway(agent, temporal_env) as first:
        async with a2a_client(first.port, streaming=True) as client:
            events = await stream(client, user_message("Save 425 to sum.txt"))
        waiting = events[-1].status_update
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        await first.kill()

    async with a2a_gateway(agent, temporal_env) as second:
        task = await task_on(second.port, waiting.task_id)
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert task.context_id == waiting.context_id
        shown = json_format.MessageToDict(task.status.message.metadata)
        assert (shown["call_id"], shown["kind"]) == ("w1", "approval")
        assert "write_file" in task.status.message.parts[0].text
        assert not (agent.workspace / "sum.txt").exists()
        async with a2a_client(second.port, streaming=False) as client:
            answered = last_task(await stream(client, user_message("approve", task=task)))
        assert answered.status.state == TaskState.TASK_STATE_COMPLETED
        assert answered.artifacts[0].parts[0].text == "I saved 425 to sum.txt."
        await second.kill()

    assert (agent.workspace / "sum.txt").read_text() == "425"
    async with a2a_gateway(agent, temporal_env) as third:
        done = await task_on(third.port, waiting.task_id)
        async with a2a_client(third.port, streaming=False) as client:
            listed = await client.list_tasks(ListTasksRequest(context_id=waiting.context_id))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert [(a.name, a.parts[0].text) for a in done.artifacts] == [
        ("answer", "I saved 425 to sum.txt.")
    ]
    assert [t.id for t in listed.tasks] == [waiting.task_id]
    description = await temporal_env.client.get_workflow_handle(f"a2a-{task.id}").describe()
    assert description.status == WorkflowExecutionStatus.COMPLETED


async def test_a_gateway_killed_while_its_run_works_and_another_reads_it_to_the_end(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    release = threading.Event()
    agent.fake.enqueue(fake.hold(release, fake.text("Done thinking.")))
    async with a2a_gateway(agent, temporal_env) as first:
        async with a2a_client(first.port, streaming=True) as client:
            async for event in client.send_message(user_message("Think a while")):
                if event.HasField("status_update"):  # "started run a2a-...": the run works
                    started = event.status_update
                    break
        await first.kill()
    try:
        async with a2a_gateway(agent, temporal_env) as second:
            working = await task_on(second.port, started.task_id)
            assert working.status.state == TaskState.TASK_STATE_WORKING
            release.set()

            async def completed() -> Task:
                task = await task_on(second.port, started.task_id)
                assert task.status.state == TaskState.TASK_STATE_COMPLETED, task.status
                return task

            done = await eventually(completed, what="the task completed")
    finally:
        release.set()
    assert done.artifacts[0].parts[0].text == "Done thinking."
    assert done.status.message.parts[0].text == "Done thinking."
