"""The shop's worker: a plain temporalio `Worker` with the plugin.

    python -m examples.shop.worker      # against the server of TEMPORAL_ADDRESS (localhost:7233)

The model is the worker's, from the environment as for `make run` (OPENAI_API_KEY,
OPENAI_BASE_URL, MODEL; without a key the offline demo model, which never calls shop tools).
"""

from __future__ import annotations

import asyncio
import os

from temporalio.client import Client
from temporalio.worker import Worker

from durable_agents import DurableAgentsPlugin
from examples.shop.agent import Shop, shop

TASK_QUEUE = "shop"
PRICES = {"shirt": 25.0, "hat": 12.5, "scarf": 18.0}


async def main() -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    plugin = DurableAgentsPlugin([shop], deps=Shop(prices=dict(PRICES)))
    worker = Worker(client, task_queue=TASK_QUEUE, plugins=[plugin])
    print(f"shop worker on task queue {TASK_QUEUE!r}; Ctrl-C stops it", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
