"""The `surveyor`: an agent whose only tool is the `units` MCP server's `convert`.

An MCP server's tools reach a run only when it asks for the server (`mcp_servers`); each is
offered as `<server>__<tool>` with the server's own JSON schema, and each call is an activity
of that name, in the run's history like any tool call.
"""

from __future__ import annotations

from pathlib import Path

from durable_agents import Agent

CONFIG = Path(__file__).with_name("mcp.json")
"""The worker's MCP servers, in the format Claude Desktop and Cursor use (`MCP_CONFIG`)."""

surveyor: Agent[None] = Agent(
    "surveyor",
    instructions="Answer questions about distances; convert units with the units server's tool.",
    mcp_servers=["units"],  # the run lists the units server's tools at its start
)
