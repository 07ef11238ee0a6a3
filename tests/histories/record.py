"""Record the histories replayed by tests/test_replay_histories.py.

    .venv/bin/python -m tests.histories.record

Runs each scenario against a fresh dev server, the real worker and the fake model server, and
writes `<scenario>.json` beside this file. Re-record only when a change is *meant* to alter
what the workflows do, and only once no run started by the old code can still be running
anywhere (see README, "Changing workflow code").
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

import tests.agent_test_tools  # noqa: F401  (registers the test tools)
from activities.openai_model import OpenAIChatModel
from testkit import fake_openai as fake
from tests.conftest import started_workers
from tests.hitl_support import wait_for_pending
from tests.session_support import echo_model, send_with_start, wait_status

HERE = Path(__file__).resolve().parent
WORKFLOW_ID = "recorded"
"""Every scenario runs under this workflow id (on a fresh server), so a replay can name it."""
Scenario = Callable[[Client, str, fake.FakeOpenAIServer], Awaitable[WorkflowHandle[Any, Any]]]


async def simple(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    model.enqueue(
        fake.tool_calls(fake.call("calculator", {"expression": "17 * 25"})), fake.text("425")
    )
    handle = await client.start_workflow(
        "AgentWorkflow", {"prompt": "17*25?"}, id=WORKFLOW_ID, task_queue=queue
    )
    await handle.result()
    return handle


async def parallel_tools(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    model.enqueue(
        fake.tool_calls(
            fake.call("calculator", {"expression": "1+1"}),
            fake.call("echo", {"text": "hi"}),
            fake.call("no_such_tool", {}),
            fake.call("calculator", "{bad json"),
        ),
        fake.tool_calls(fake.call("refuses", {"text": "x"})),
        fake.text(""),
        fake.text("done"),
    )
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "many", "tools": ["calculator", "echo", "refuses"]},
        id=WORKFLOW_ID,
        task_queue=queue,
    )
    await handle.result()
    return handle


async def local_tools(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    """Calculator calls as local activities (`local=True`): one marker each, a failure among
    them, next to a regular activity in the same round."""
    model.enqueue(
        fake.tool_calls(
            fake.call("calculator", {"expression": "17 * 25"}),
            fake.call("calculator", {"expression": "1/0"}),
            fake.call("echo", {"text": "hi"}),
        ),
        fake.tool_calls(fake.call("calculator", {"expression": "425 + 1"})),
        fake.text("426"),
    )
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "local", "tools": ["calculator", "echo"]},
        id=WORKFLOW_ID,
        task_queue=queue,
    )
    await handle.result()
    return handle


async def approval(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    model.enqueue(
        fake.tool_calls(
            fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"),
            fake.call("write_file", {"path": "b.txt", "content": "b"}, id="w2"),
            fake.call("ask_user", {"question": "why?"}, id="q1"),
        ),
        fake.text("done"),
    )
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "write", "tools": ["write_file", "ask_user"]},
        id=WORKFLOW_ID,
        task_queue=queue,
    )
    await wait_for_pending(handle, count=3)
    await handle.signal("approve", {"call_id": "w1", "args": {"path": "c.txt", "content": "c"}})
    await handle.execute_update("decide", {"call_id": "w2", "decision": "reject", "reason": "no"})
    await handle.signal("reply", {"call_id": "*", "text": "because"})
    await handle.result()
    return handle


async def approval_timeout(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    model.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "t.txt", "content": "t"})),
        fake.text("gave up"),
    )
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "w", "tools": ["write_file"], "approval_timeout_seconds": 1},
        id=WORKFLOW_ID,
        task_queue=queue,
    )
    await handle.result()
    return handle


async def cancellation(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    model.enqueue(
        fake.tool_calls(fake.call("echo", {"text": "a"})),
        fake.tool_calls(fake.call("slow_tool", {"seconds": 60})),
    )
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "x", "tools": ["echo", "slow_tool"]},
        id=WORKFLOW_ID,
        task_queue=queue,
    )
    while model.request_count < 2:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    await handle.cancel()
    with contextlib.suppress(Exception):  # the run ends cancelled: that is the scenario
        await handle.result()
    return handle


async def continue_as_new(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    model.set_handler(
        lambda body: fake.tool_calls(fake.call("echo", {"text": f"t{len(body['messages'])}"}))
    )
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "go", "tools": ["echo"], "max_iterations": 14,
         "continue_as_new_after_events": 100},
        id=WORKFLOW_ID,
        task_queue=queue,
    )  # fmt: skip
    await handle.result()
    # The first run: the one that continued as new.
    return client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)


async def session(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    """A session with a child run per turn (recorded before inline turns, which replays through
    the `inline-session-turns` patch; `turns: child` keeps it so when re-recorded)."""
    model.set_handler(echo_model)
    session_id = WORKFLOW_ID
    _, handle = await send_with_start(
        client, session_id, queue, "hello", {"continue_as_new_after_events": 30, "turns": "child"}
    )
    for index in range(4):
        await handle.signal("send", {"text": f"m{index}"})
    await wait_status(handle, lambda s: s.turns == 5 and s.state == "idle")
    await handle.signal("end", {"reason": "recorded"})
    await handle.result()
    return client.get_workflow_handle(session_id, run_id=handle.first_execution_run_id)


async def session_inline(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    """A session whose turns run inside its history: a tool call, an approval answered at the
    session (`decide`), queued messages, then continue-as-new between turns."""

    def reply(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]
        if last["role"] == "user" and last["content"] == "save it":
            return fake.tool_calls(fake.call("write_file", {"path": "s.txt", "content": "s"}))
        if last["role"] == "user" and last["content"] == "add":
            return fake.tool_calls(fake.call("calculator", {"expression": "2+3"}))
        return echo_model(body)

    model.set_handler(reply)
    session_id = WORKFLOW_ID
    _, handle = await send_with_start(
        client, session_id, queue, "add", {"continue_as_new_after_events": 40}
    )
    await handle.signal("send", {"text": "save it"})
    [request] = (await wait_status(handle, lambda s: len(s.pending) == 1)).pending
    await handle.execute_update("decide", {"call_id": request.call_id, "decision": "approve"})
    for index in range(4):
        await handle.signal("send", {"text": f"m{index}"})
    await wait_status(handle, lambda s: s.turns == 6 and s.state == "idle" and s.runs > 1)
    await handle.signal("end", {"reason": "recorded"})
    await handle.result()
    return client.get_workflow_handle(session_id, run_id=handle.first_execution_run_id)


SCENARIOS: dict[str, Scenario] = {
    "simple": simple,
    "parallel_tools": parallel_tools,
    "local_tools": local_tools,
    "approval": approval,
    "approval_timeout": approval_timeout,
    "cancellation": cancellation,
    "continue_as_new": continue_as_new,
    "session": session,
    "session_inline": session_inline,
}


async def record(names: list[str]) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=f"{sys.prefix}/bin/temporal",
        data_converter=pydantic_data_converter,
    )
    try:
        for name in names:
            with fake.FakeOpenAIServer() as server:
                model = OpenAIChatModel(
                    api_key="sk-recording", base_url=server.base_url, default_model="fake-model-1"
                )
                async with AsyncExitStack() as stack:
                    workspace = HERE / ".workspace"
                    workspace.mkdir(exist_ok=True)
                    queue = await started_workers(stack, env.client, model, workspace)
                    handle = await SCENARIOS[name](env.client, queue, server)
                    history = await handle.fetch_history()
                (HERE / f"{name}.json").write_text(history.to_json())
                print(f"recorded {name}: {len(history.events)} events")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record(sys.argv[1:] or list(SCENARIOS)))
