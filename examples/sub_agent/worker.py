"""The worker that serves both agents: a plain temporalio `Worker` with the plugin.

    python -m examples.sub_agent.worker     # against TEMPORAL_ADDRESS (localhost:7233)

The model is the worker's, from the environment as for `make run` (without OPENAI_API_KEY the
offline demo model, which never hands work to another agent).
"""

from __future__ import annotations

import asyncio
import os

from temporalio.client import Client
from temporalio.worker import Worker

from durable_agents import DurableAgentsPlugin
from examples.sub_agent.agents import editor, fact_finder

TASK_QUEUE = "editors"


async def main() -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    plugin = DurableAgentsPlugin([editor, fact_finder])
    worker = Worker(client, task_queue=TASK_QUEUE, plugins=[plugin])
    print(f"editor and fact_finder on task queue {TASK_QUEUE!r}; Ctrl-C stops it", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
