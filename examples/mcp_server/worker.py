"""The surveyor's worker: a plain temporalio `Worker` with the plugin and the MCP servers of
`mcp.json` (started on first use, stopped with the worker).

    python -m examples.mcp_server.worker     # against TEMPORAL_ADDRESS (localhost:7233)
    python -m examples.mcp_server.ask "How many feet is 3 km?"

The same servers reach the ready-made worker through the environment:
`MCP_CONFIG=examples/mcp_server/mcp.json make run`.
"""

from __future__ import annotations

import asyncio
import os

from temporalio.client import Client
from temporalio.worker import Worker

from durable_agents import DurableAgentsPlugin
from durable_agents.activities.mcp_config import load_mcp_config
from durable_agents.activities.mcp_servers import McpServers
from examples.mcp_server.agent import CONFIG, surveyor

TASK_QUEUE = "surveyors"


async def main() -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    async with McpServers(load_mcp_config(CONFIG)) as servers:
        plugin = DurableAgentsPlugin([surveyor], mcp=servers)
        worker = Worker(client, task_queue=TASK_QUEUE, plugins=[plugin])
        print(f"surveyor on task queue {TASK_QUEUE!r} with MCP servers {servers.names}", flush=True)
        await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
