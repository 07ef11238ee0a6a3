"""The Temporal server goes down and comes back (same SQLite file, same port) while runs are in
flight: the runs, their histories and the decisions sent after the restart all survive, and the
worker, which kept running, reconnects on its own.

A dev server of our own (runtime.dev_server.DevServer, as `make run` uses) on free ports with a
file store; the real worker in-process, talking to the fake model server.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.runtime.dev_server import DevServer, is_listening
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from testkit.crash_tools import free_port
from testkit.eventually import eventually
from tests.agent_test_tools import executions
from tests.conftest import FAKE_MODEL, SECRET_API_KEY, started_workers
from tests.hitl_support import wait_for_pending

RESULT_TIMEOUT = 60.0


@dataclass
class Restartable:
    """A dev server on a fixed port and database file, which the test can stop and start."""

    db_file: Path
    port: int
    ui_port: int
    server: DevServer | None = None
    starts: int = 0

    async def start(self) -> None:
        self.server = await asyncio.to_thread(
            DevServer.start,
            db_file=self.db_file,
            port=self.port,
            ui_port=self.ui_port,
            ready_timeout=60,
        )
        self.starts += 1

    async def stop(self) -> None:
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)
            self.server = None
        assert not is_listening("127.0.0.1", self.port)

    @property
    def address(self) -> str:
        return f"localhost:{self.port}"


@dataclass
class Setup:
    server: Restartable
    client: Client
    task_queue: str
    fake: FakeOpenAIServer

    async def start_run(self, payload: dict[str, Any]) -> WorkflowHandle[Any, Any]:
        return await self.client.start_workflow(
            "AgentWorkflow",
            payload,
            id=f"restart-{uuid.uuid4()}",
            task_queue=self.task_queue,
            result_type=AgentResult,
        )


@pytest.fixture
async def setup(fake_model: FakeOpenAIServer, tmp_path: Path) -> AsyncIterator[Setup]:
    server = Restartable(tmp_path / "dev.db", free_port(), free_port())
    await server.start()
    model = OpenAIChatModel(
        api_key=SECRET_API_KEY, base_url=fake_model.base_url, default_model=FAKE_MODEL
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    try:
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        async with AsyncExitStack() as stack:
            queue = await started_workers(stack, client, model, workspace)
            yield Setup(server, client, queue, fake_model)
            # The workers shut down here; with the server up again that is quick.
    finally:
        await model.close()
        await server.stop()


async def result_of(handle: WorkflowHandle[Any, Any]) -> AgentResult:
    result = await asyncio.wait_for(handle.result(), RESULT_TIMEOUT)
    assert isinstance(result, AgentResult)
    return result


async def test_a_run_waiting_for_approval_survives_a_server_restart(setup: Setup) -> None:
    setup.fake.enqueue(
        fake.tool_calls(fake.call("side_effect", {"label": "restart"}, id="c1")),
        fake.text("done after the restart"),
    )
    handle = await setup.start_run({"prompt": "approve me later", "tools": ["side_effect"]})
    await wait_for_pending(handle, timeout=30)
    run_id = (await handle.describe()).run_id

    await setup.server.stop()
    await setup.server.start()

    # The same run, still waiting, with the same pending call (the worker answers the query, so
    # it has reconnected too).
    description = await asyncio.wait_for(handle.describe(), 30)
    assert description.run_id == run_id
    assert description.status is not None and description.status.name == "RUNNING"
    pending = await wait_for_pending(handle, timeout=30)
    assert [p.call_id for p in pending] == ["c1"]

    await handle.signal("approve", {"call_id": "c1", "by": "after-restart"})
    result = await result_of(handle)

    assert result.answer == "done after the restart"
    assert result.steps[0].observation == "did restart"
    assert result.steps[0].human is not None and result.steps[0].human.by == "after-restart"
    assert executions[f"{handle.id}/1/c1"] == 1
    assert setup.fake.request_count == 2
    assert setup.server.starts == 2
    assert setup.fake.errors == []


async def test_a_model_reply_that_arrives_while_the_server_is_down(setup: Setup) -> None:
    """The model answers while the server is down: the worker cannot report the result. After the
    restart the run still completes: the SDK reports the result late or the activity times out
    (model_timeout_seconds=5) and is retried."""
    answer = threading.Event()
    setup.fake.enqueue(fake.hold(answer, fake.text("first answer")), fake.text("second answer"))
    handle = await setup.start_run(
        {"prompt": "slow model", "tools": [], "model_timeout_seconds": 5, "model_max_attempts": 3}
    )
    await eventually(lambda: setup.fake.request_count == 1, what="the model call")

    await setup.server.stop()
    answer.set()  # the model answers now, while no server is listening
    await eventually(lambda: setup.fake.responses_sent == 1, what="the answer to be sent")
    await setup.server.start()
    result = await result_of(handle)

    assert result.stop_reason == "completed"
    assert (result.answer, setup.fake.request_count) in {
        ("first answer", 1),  # reported late, once the server was back
        ("second answer", 2),  # lost, and retried after the attempt's timeout
    }
    assert setup.fake.errors == []


async def test_runs_started_before_and_after_a_restart_all_complete(setup: Setup) -> None:
    setup.fake.set_handler(lambda body: fake.text(f"answer to {body['messages'][1]['content']}"))
    before = [await setup.start_run({"prompt": f"before {i}", "tools": []}) for i in range(3)]
    results_before = await asyncio.wait_for(
        asyncio.gather(*(h.result() for h in before)), RESULT_TIMEOUT
    )

    await setup.server.stop()
    await setup.server.start()

    after = [await setup.start_run({"prompt": f"after {i}", "tools": []}) for i in range(3)]
    results_after = await asyncio.wait_for(
        asyncio.gather(*(h.result() for h in after)), RESULT_TIMEOUT
    )
    assert [r.answer for r in results_before] == [f"answer to before {i}" for i in range(3)]
    assert [r.answer for r in results_after] == [f"answer to after {i}" for i in range(3)]
    # The histories written before the restart are still there, complete.
    for handle in before:
        description = await handle.describe()
        assert description.status is not None and description.status.name == "COMPLETED"
    assert setup.fake.request_count == 6
