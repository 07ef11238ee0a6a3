"""Record the histories replayed by tests/test_replay_histories.py.

    .venv/bin/python -m tests.histories.record

Runs each scenario against a fresh dev server, the real worker (with the `time` MCP server,
mcp-server-time over stdio, configured) and the fake model server, and writes `<scenario>.json`
beside this file. A scenario with child runs writes the children's histories too, under the
file names `WORKFLOW_IDS` lists (a history replays under its own workflow id). From the first
release on, never re-record to make a change pass: a change to workflow code is patched or
versioned so that these histories (and the users' own) still replay (docs/versioning.md); a new
scenario is recorded and added beside them.
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
from durable_agents.activities.mcp_config import parse_mcp_config
from durable_agents.activities.mcp_servers import McpServers
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.agent import Agent
from durable_agents.contracts.events import TERMINAL_EVENT_TYPES
from durable_agents.loop.plan import PLANNER_PROMPT
from durable_agents.plugin import with_agents
from durable_agents.runtime.event_stream import follow_events
from durable_agents.runtime.search_attributes import ensure as ensure_search_attributes
from durable_agents.testing import fake_openai as fake
from durable_agents.tools.agents import RESEARCHER
from durable_agents.tools.catalog import Catalog
from tests.catalog import TEST_CATALOG
from tests.conftest import started_workers
from tests.hitl_support import wait_for_pending
from tests.session_support import echo_model, send_with_start, wait_status

HERE = Path(__file__).resolve().parent
WORKFLOW_ID = "recorded"
"""Every scenario runs under this workflow id (on a fresh server), so a replay can name it."""
WORKFLOW_IDS = {
    "sub_agent_child": f"{WORKFLOW_ID}/researcher-d1",
    "plan_and_execute_step": f"{WORKFLOW_ID}/step-1",
}
"""The workflow id of each recorded child run, by file name (the others are `WORKFLOW_ID`)."""
MCP_SERVERS = {
    "time": {
        "command": sys.executable,
        "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
    }
}
Handle = WorkflowHandle[Any, Any]
Scenario = Callable[[Client, str, fake.FakeOpenAIServer], Awaitable[Handle | dict[str, Handle]]]


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


async def local_model(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    """Model calls as local activities (`model_call: local`), followed live: a tool round, a
    call retried twice (the first wait, 1 s, in the worker; the second, 2 s, a durable timer),
    a streamed reply whose text the workflow's `model_call_finished` carries whole."""
    model.enqueue(
        fake.tool_calls(
            fake.call("calculator", {"expression": "6 * 7"}),
            fake.call("echo", {"text": "hi"}),
        ),
        fake.error(503),
        fake.error(503),
        fake.streamed("42, and hi.", piece_seconds=0.05, piece_chars=4),
    )
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "6*7, say hi", "tools": ["calculator", "echo"], "model_call": "local"},
        id=WORKFLOW_ID,
        task_queue=queue,
    )
    await collect_events(client, WORKFLOW_ID)
    await handle.result()
    return handle


async def streamed(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    """A run followed live on its event stream: the model's deltas (the stream's publish
    signals), a follower's polls (updates), an approval, each model call announced by the
    workflow."""
    model.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "s.txt", "content": "s"}, id="w1")),
        fake.streamed(
            "Written, and this answer streamed in pieces.", piece_seconds=0.05, piece_chars=5
        ),
    )
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "write s", "tools": ["write_file"], "stream_deltas": True},
        id=WORKFLOW_ID,
        task_queue=queue,
    )
    following = asyncio.create_task(collect_events(client, WORKFLOW_ID))
    await wait_for_pending(handle)
    await handle.signal("approve", {"call_id": "w1", "by": "ana"})
    await following
    await handle.result()
    return handle


async def collect_events(client: Client, workflow_id: str) -> list[Any]:
    return [e async for e in follow_events(client, workflow_id, stop_at=TERMINAL_EVENT_TYPES)]


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
    """A session with a child run per turn (`turns: child`), continued as new after 30 events."""
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


def tool_results(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "tool")


async def sub_agent(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    """A call of the `researcher` profile: a child run (`recorded/researcher-d1`, recorded too)
    that calls the calculator and reports, and the parent's answer from the report."""

    def reply(body: dict[str, Any]) -> Any:
        if body["messages"][0]["content"] == RESEARCHER.system_prompt:
            if not tool_results(body):
                return fake.tool_calls(fake.call("calculator", {"expression": "6*7"}, id="r1"))
            return fake.text("The researcher found 42.")
        if not tool_results(body):
            return fake.tool_calls(fake.call("researcher", {"task": "What is 6*7?"}, id="d1"))
        return fake.text("Delegated: 42")

    model.set_handler(reply)
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "research 6*7", "agents": ["researcher"]},
        id=WORKFLOW_ID,
        task_queue=queue,
    )
    await handle.result()
    child = client.get_workflow_handle(WORKFLOW_IDS["sub_agent_child"])
    return {"sub_agent": handle, "sub_agent_child": child}


async def plan_and_execute(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    """`mode: plan_and_execute` with `plan_approval`: the plan waits and is approved (`decide`);
    step 1 runs as a child (`recorded/step-1`, recorded too) with a calculator call; step 2
    answers empty twice and fails; the replan's one step runs; then the synthesis call."""
    empties = {"left": 2}

    def reply(body: dict[str, Any]) -> Any:
        system = body["messages"][0]["content"] or ""
        user = next((m["content"] or "" for m in body["messages"] if m["role"] == "user"), "")
        if system == PLANNER_PROMPT:
            if "Revise the plan" in user:
                plan = {"steps": [{"goal": "Add 8 to 42 with the calculator"}]}
                return fake.tool_calls(fake.call("submit_plan", plan, id="p2"))
            plan = {"steps": [{"goal": "Compute 6*7"}, {"goal": "Add 8 to it"}]}
            return fake.tool_calls(fake.call("submit_plan", plan, id="p1"))
        if system.startswith("You write the final answer"):
            return fake.text("Final: 6*7 is 42, and 42+8 is 50.")
        if "Compute 6*7" in user.splitlines()[-1]:
            if not tool_results(body):
                return fake.tool_calls(fake.call("calculator", {"expression": "6*7"}, id="c1"))
            return fake.text("42")
        if user.splitlines()[-1].endswith("Add 8 to it") and empties["left"]:
            empties["left"] -= 1
            return fake.text("")
        if not tool_results(body):
            return fake.tool_calls(fake.call("calculator", {"expression": "42+8"}, id="c2"))
        return fake.text("50")

    model.set_handler(reply)
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "6*7 then +8", "mode": "plan_and_execute", "plan_approval": True},
        id=WORKFLOW_ID,
        task_queue=queue,
    )
    [request] = await wait_for_pending(handle)
    await handle.execute_update("decide", {"call_id": request.call_id, "decision": "approve"})
    await handle.result()
    step = client.get_workflow_handle(WORKFLOW_IDS["plan_and_execute_step"])
    return {"plan_and_execute": handle, "plan_and_execute_step": step}


async def mcp_tool(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    """A run with the `time` MCP server: its tools listed (an activity), two calls of one (each
    an activity named `time__get_current_time`), the second an error (a bad timezone)."""
    model.enqueue(
        fake.tool_calls(fake.call("time__get_current_time", {"timezone": "Asia/Tokyo"}, id="c1")),
        fake.tool_calls(fake.call("time__get_current_time", {"timezone": "Mars/Olympus"}, id="c2")),
        fake.text("It is morning in Tokyo."),
    )
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "What time is it in Tokyo?", "mcp_servers": ["time"]},
        id=WORKFLOW_ID,
        task_queue=queue,
    )
    await handle.result()
    return handle


async def search_attributes(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    """A run on a worker whose server has the agent search attributes: the
    `agent-search-attributes` marker and an upsert at each change of phase, waiting for an
    approval in between (issue 39: it replays on a plain `Replayer`, with no catalog flags)."""
    return await approved_write(client, queue, model, "sa.txt", {})


async def approved_write(
    client: Client, queue: str, model: fake.FakeOpenAIServer, path: str, settings: dict[str, Any]
) -> Handle:
    """A run with `settings` that writes `path` (its first letter) once its approval comes."""
    model.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": path, "content": path[0]}, id="w1")),
        fake.text("Written."),
    )
    handle = await client.start_workflow(
        "AgentWorkflow",
        {"prompt": "write it", "tools": ["write_file"], **settings},
        id=WORKFLOW_ID,
        task_queue=queue,
    )
    await wait_for_pending(handle)
    await handle.signal("approve", {"call_id": "w1"})
    await handle.result()
    return handle


async def definitions(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    """A session of the agent `support` across a deploy (issue 37): worker A serves version 1,
    whose first turn records the definition it starts with and whose second finds the same;
    worker B then serves version 2 (another prompt, `on_new_definition: migrate_at_turn`), and
    the third turn records its migration. On a queue of its own, the two workers one after the
    other."""
    model.set_handler(echo_model)
    chat = OpenAIChatModel(api_key="sk-recording", base_url=model.base_url,
                           default_model="fake-model-1")  # fmt: skip
    deploys = [
        Agent("support", instructions="You answer questions.", version="1", tools=["calculator"]),
        Agent("support", instructions="You answer questions briefly.", version="2",
              tools=["calculator"], on_new_definition="migrate_at_turn"),
    ]  # fmt: skip
    own = f"{queue}-definitions"
    start = {"agent": deploys[0].input("x").settings().model_dump(mode="json")}
    for deploy, texts in zip(deploys, (["hello", "again"], ["and now"]), strict=True):
        async with AsyncExitStack() as stack:
            catalog = with_agents(TEST_CATALOG, [deploy])
            await started_workers(stack, client, chat, HERE / ".workspace", own, catalog=catalog)
            for text in texts:
                _, handle = await send_with_start(client, WORKFLOW_ID, own, text, start)
            if deploy is deploys[-1]:
                await handle.signal("end", {"reason": "recorded"})
                await handle.result()
    return client.get_workflow_handle(WORKFLOW_ID, run_id=handle.first_execution_run_id)


async def definitions_approval(client: Client, queue: str, model: fake.FakeOpenAIServer) -> Any:
    """A one-shot run that waits for an approval, recorded under `agent-definition-once`: its
    definition made by the `record_definition` activity from its settings as it starts, and no
    record as it ends (the session of `definitions`, recorded again under the same patch, is
    `definitions_once`)."""
    return await approved_write(client, queue, model, "d.txt", {"agent_version": "1"})


SCENARIO_CATALOGS: dict[str, Catalog] = {
    "search_attributes": TEST_CATALOG.with_search_attributes(),
}
"""The catalog of the worker that records a scenario, where it is not the tests' own."""

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
    "sub_agent": sub_agent,
    "plan_and_execute": plan_and_execute,
    "mcp_tool": mcp_tool,
    "streamed": streamed,
    "search_attributes": search_attributes,
    "local_model": local_model,
    "definitions": definitions,
    "definitions_once": definitions,
    "definitions_approval": definitions_approval,
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
                mcp = McpServers(parse_mcp_config({"mcpServers": MCP_SERVERS}))
                async with AsyncExitStack() as stack:
                    workspace = HERE / ".workspace"
                    workspace.mkdir(exist_ok=True)
                    catalog = SCENARIO_CATALOGS.get(name, TEST_CATALOG)
                    if catalog.search_attributes:
                        assert await ensure_search_attributes(env.client)
                    queue = await started_workers(
                        stack, env.client, model, workspace, mcp=mcp, catalog=catalog
                    )
                    handles = await SCENARIOS[name](env.client, queue, server)
                    if not isinstance(handles, dict):
                        handles = {name: handles}
                    for stem, handle in handles.items():
                        assert handle.id == WORKFLOW_IDS.get(stem, WORKFLOW_ID), (stem, handle.id)
                        history = await handle.fetch_history()
                        (HERE / f"{stem}.json").write_text(history.to_json())
                        print(f"recorded {stem}: {len(history.events)} events")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record(sys.argv[1:] or list(SCENARIOS)))
