"""Ask the cashier for a basket's total; print the script's tool calls and the model calls.

python -m examples.code_mode.total "apple, bread, cheese, dates, eggs"
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid

from temporalio.client import Client

from durable_agents import AgentClient
from examples.code_mode.agent import cashier
from examples.code_mode.worker import TASK_QUEUE


async def total(agents: AgentClient, basket: str, *, task_queue: str = TASK_QUEUE) -> str:
    """The cashier's answer for `basket`, after printing what its run did."""
    run = await agents.start(
        cashier, f"Total of: {basket}", id=f"cashier-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    result = await run.result()
    status = await run.status()
    print(f"  {len(result.model_calls)} model calls, {status.steps} steps")
    return result.answer


async def main(basket: str) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    print(await total(AgentClient(client), basket))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("basket", help="items, comma-separated")
    asyncio.run(main(parser.parse_args().basket))
