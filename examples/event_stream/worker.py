"""The adder's worker: a plain temporalio `Worker` with the plugin.

python -m examples.event_stream.worker     # against TEMPORAL_ADDRESS (localhost:7233)
"""

from __future__ import annotations

import asyncio
import os

from temporalio.client import Client
from temporalio.worker import Worker

from durable_agents import DurableAgentsPlugin
from examples.event_stream.agent import adder

TASK_QUEUE = "adders"


async def main() -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    worker = Worker(client, task_queue=TASK_QUEUE, plugins=[DurableAgentsPlugin([adder])])
    print(f"adder on task queue {TASK_QUEUE!r}; Ctrl-C stops it", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
