"""Callees behind one protocol (issue 19): an MCP server's configured timeout is the call's
activity timeout; concurrent calls in one round share no state (two sub-agents called in one
reply run in parallel, each step names its own child). Real worker, server and MCP server."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.mcp_config import parse_mcp_config
from durable_agents.activities.mcp_servers import McpServers
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.tools.agents import RESEARCHER
from durable_agents.workflows.callees.mcp_tool import DEFAULT_MCP_TIMEOUT, MCP_TIMEOUT_MARGIN
from testkit.eventually import eventually
from tests.conftest import ScriptedHarness, started_workers
from tests.scripted_model import Reply, ScriptedChatModel, call, gate, text, tool_calls

TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


async def scheduled_timeouts(env: WorkflowEnvironment, workflow_id: str) -> dict[str, float]:
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    found = {}
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            found[attrs.activity_type.name] = attrs.start_to_close_timeout.ToTimedelta()
    return {name: limit.total_seconds() for name, limit in found.items()}


async def run_time_tool(
    env: WorkflowEnvironment, tmp_path: Path, server: Mapping[str, object]
) -> str:
    model = ScriptedChatModel()
    model.enqueue(
        tool_calls(call("time__get_current_time", {"timezone": "UTC"}, id="t1")), text("now")
    )
    servers = McpServers(parse_mcp_config({"mcpServers": {"time": dict(server)}}))
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, env.client, model, tmp_path, mcp=servers)
        handle = await env.client.start_workflow(
            "AgentWorkflow",
            {"prompt": "time?", "mcp_servers": ["time"]},
            id=f"mcp-timeout-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
        assert (await handle.result()).answer == "now"
    return handle.id


async def test_an_mcp_servers_timeout_is_its_calls_activity_timeout(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    configured = await run_time_tool(temporal_env, tmp_path, {**TIME, "timeout": 150})
    limits = await scheduled_timeouts(temporal_env, configured)
    assert limits["time__get_current_time"] == 150 + MCP_TIMEOUT_MARGIN.total_seconds()

    default = await run_time_tool(temporal_env, tmp_path, TIME)
    limits = await scheduled_timeouts(temporal_env, default)
    assert limits["time__get_current_time"] == DEFAULT_MCP_TIMEOUT.total_seconds()


async def test_two_sub_agents_in_one_reply_run_in_parallel_with_their_own_state(
    scripted_agent: ScriptedHarness,
) -> None:
    release = asyncio.Event()
    children_asked: list[str] = []

    def script(request: ModelRequest) -> Reply | str:
        system = request.messages[0].content or ""
        task = request.messages[1].content or ""
        results = [m.content or "" for m in request.messages if m.role == "tool"]
        if system == RESEARCHER.system_prompt:
            children_asked.append(task)
            return gate(release, f"researched {task}")  # held until both children asked
        if not results:
            return tool_calls(
                call("researcher", {"task": "alpha"}, id="a"),
                call("researcher", {"task": "beta"}, id="b"),
            )
        return " + ".join(results)

    scripted_agent.model.set_handler(script)
    handle = await scripted_agent.start({"prompt": "research both", "agents": ["researcher"]})

    async def both_running() -> list[str]:
        assert len(children_asked) == 2, children_asked
        return children_asked

    assert sorted(await eventually(both_running, what="both children asking at once")) == [
        "alpha", "beta",
    ]  # fmt: skip
    release.set()
    result = await handle.result()
    assert result.answer == "researched alpha + researched beta"
    assert [(s.call_id, s.observation, s.child_workflow_id) for s in result.steps] == [
        ("a", "researched alpha", f"{handle.id}/researcher-a"),
        ("b", "researched beta", f"{handle.id}/researcher-b"),
    ]
