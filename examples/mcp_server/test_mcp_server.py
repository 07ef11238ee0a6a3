"""The surveyor calls the units server's `convert` through MCP: a real server process started
from `mcp.json`, a real time-skipping Temporal server, and a scripted `TestModel`."""

from __future__ import annotations

import pytest

from durable_agents.activities.mcp_config import load_mcp_config
from durable_agents.activities.mcp_servers import McpServers
from durable_agents.testing import AgentTestEnvironment, TestModel, call, text
from examples.mcp_server.agent import CONFIG, surveyor
from examples.mcp_server.ask import ask


async def test_the_agent_calls_the_servers_tool_as_an_activity(
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = TestModel(
        [
            call("units__convert", value=3, from_unit="km", to_unit="ft"),
            text("3 km is about 9843 feet."),
        ]
    )
    servers = McpServers(load_mcp_config(CONFIG))
    async with servers, AgentTestEnvironment.start([surveyor], mcp=servers) as env:
        with surveyor.override(model=model):
            answer = await ask(env.agents, "How many feet is 3 km?", task_queue=env.task_queue)
    assert answer == "3 km is about 9843 feet."
    assert "units__convert" in capsys.readouterr().out
    tool_message = model.requests[1].messages[-1]
    assert tool_message["content"] == "3 km = 9843 ft"
    offered = {tool["function"]["name"] for tool in model.requests[0]["tools"]}
    assert offered == {"units__convert"}
