"""The quoter's worker: a plain temporalio `Worker` with the plugin.

    python -m examples.typed_output.worker     # against TEMPORAL_ADDRESS (localhost:7233)

Typed answers need a model that calls tools (a real model, or `make real-model`): the offline
demo model answers in plain text, which ends the run with `stop_reason: invalid_output`.
"""

from __future__ import annotations

import asyncio
import os

from temporalio.client import Client
from temporalio.worker import Worker

from durable_agents import DurableAgentsPlugin
from examples.typed_output.agent import quoter

TASK_QUEUE = "quoters"


async def main() -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    worker = Worker(client, task_queue=TASK_QUEUE, plugins=[DurableAgentsPlugin([quoter])])
    print(f"quoter on task queue {TASK_QUEUE!r}; Ctrl-C stops it", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
