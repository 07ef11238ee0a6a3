"""The worker, with a long-term memory store: SQLite in `.data/memory.db` (or PostgreSQL with
`MEMORY_DATABASE_URL`), opened before the worker polls and closed after.

    python -m examples.memory.worker        # against TEMPORAL_ADDRESS (localhost:7233)
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import Worker

from durable_agents import DurableAgentsPlugin
from durable_agents.tools.memory_store import open_memory_store
from examples.memory.agent import assistant

TASK_QUEUE = "remembering"


async def main() -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    url = os.environ.get("MEMORY_DATABASE_URL")
    memory = await open_memory_store(url=url, path=Path(".data/memory.db"))
    try:
        plugin = DurableAgentsPlugin([assistant], memory=memory)
        worker = Worker(client, task_queue=TASK_QUEUE, plugins=[plugin])
        print(f"assistant with memory on task queue {TASK_QUEUE!r}", flush=True)
        await worker.run()
    finally:
        await memory.close()


if __name__ == "__main__":
    asyncio.run(main())
