"""The bookkeeper's worker: a plain temporalio `Worker` with the plugin.

    python -m examples.plan_and_execute.worker     # against TEMPORAL_ADDRESS (localhost:7233)

The offline demo model plans arithmetic too, so this example runs without a key.
"""

from __future__ import annotations

import asyncio
import os

from temporalio.client import Client
from temporalio.worker import Worker

from durable_agents import DurableAgentsPlugin
from examples.plan_and_execute.agent import bookkeeper

TASK_QUEUE = "bookkeepers"


async def main() -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    worker = Worker(client, task_queue=TASK_QUEUE, plugins=[DurableAgentsPlugin([bookkeeper])])
    print(f"bookkeeper on task queue {TASK_QUEUE!r}; Ctrl-C stops it", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
