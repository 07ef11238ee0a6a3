"""Order from code: start a run, approve (or reject) what waits for a person, print the answer.

python -m examples.shop.order "Order 17 shirts"            # approves the order
python -m examples.shop.order "Order 17 shirts" --reject "too many"
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid

from temporalio.client import Client

from durable_agents import AgentClient, RunHandle
from examples.shop.agent import shop
from examples.shop.worker import TASK_QUEUE


async def decide_all(run: RunHandle, reject: str | None) -> None:
    """Answer every request of the run as it comes, until none is left."""
    while (request := await run.next_request()) is not None:
        print(f"waiting: {request.tool}({request.args})")
        if reject is None:
            await run.approve(request.call_id, digest=request.args_digest)
        else:
            await run.reject(request.call_id, reason=reject)


async def main(prompt: str, reject: str | None) -> str:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    agents = AgentClient(client)
    run = await agents.start(
        shop, prompt, id=f"order-{uuid.uuid4().hex[:8]}", task_queue=TASK_QUEUE
    )
    await decide_all(run, reject)
    result = await run.result()
    return result.answer


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompt")
    parser.add_argument("--reject", metavar="REASON", help="reject instead of approving")
    options = parser.parse_args()
    print(asyncio.run(main(options.prompt, options.reject)))
