"""The clock's worker, on the model the environment names.

    OPENAI_API_KEY=sk-... MODEL=gpt-4o-mini python -m examples.real_model.worker
    OPENAI_API_KEY=ollama OPENAI_BASE_URL=http://localhost:11434/v1 MODEL=qwen2.5:7b \\
        python -m examples.real_model.worker
    make real-model     # a small tool-calling model on this machine; prints the variables

then `python -m examples.real_model.ask "What time is it in Tokyo when it is noon in Paris?"`.
"""

from __future__ import annotations

import asyncio
import os

from temporalio.client import Client
from temporalio.worker import Worker

from durable_agents import DurableAgentsPlugin
from examples.real_model.agent import clock

TASK_QUEUE = "clocks"


async def main() -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    # model=None: the plugin reads OPENAI_API_KEY, OPENAI_BASE_URL and MODEL as worker.py does
    worker = Worker(client, task_queue=TASK_QUEUE, plugins=[DurableAgentsPlugin([clock])])
    endpoint = os.environ.get("OPENAI_BASE_URL", "OpenAI")
    print(f"clock on task queue {TASK_QUEUE!r}, model server {endpoint}", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
