"""The concierge's worker: a plain temporalio `Worker` with the plugin.

    python -m examples.session_chat.worker    # against TEMPORAL_ADDRESS (localhost:7233)

The model is the worker's, from the environment as for `make run` (OPENAI_API_KEY,
OPENAI_BASE_URL, MODEL; without a key the offline demo model, which never calls the tool).
"""

from __future__ import annotations

import asyncio
import os

from temporalio.client import Client
from temporalio.worker import Worker

from durable_agents import DurableAgentsPlugin
from examples.session_chat.agent import concierge

TASK_QUEUE = "concierge"


async def main() -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    worker = Worker(client, task_queue=TASK_QUEUE, plugins=[DurableAgentsPlugin([concierge])])
    print(f"concierge worker on task queue {TASK_QUEUE!r}; Ctrl-C stops it", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
