"""Ask the bookkeeper; print its plan's steps with their outcomes, then the answer.

python -m examples.plan_and_execute.compute "What is 17 * 25, then add 8 to it"
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid

from temporalio.client import Client

from durable_agents import AgentClient
from examples.plan_and_execute.agent import bookkeeper
from examples.plan_and_execute.worker import TASK_QUEUE


async def compute(agents: AgentClient, request: str, *, task_queue: str = TASK_QUEUE) -> str:
    """The bookkeeper's answer, after printing each step of its plan with its outcome."""
    run = await agents.start(
        bookkeeper, request, id=f"books-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    result = await run.result()
    for step in result.steps:
        print(f"  {step.tool} {step.args} -> {step.observation}")
    print(f"  {len(result.model_calls)} model call(s)")
    return result.answer


async def main(request: str) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    print(await compute(AgentClient(client), request))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("request")
    asyncio.run(main(parser.parse_args().request))
