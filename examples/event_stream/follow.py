"""Start a run and print its events as they come, until the run ends.

python -m examples.event_stream.follow "What is 17 * 25?"
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid

from temporalio.client import Client

from durable_agents import AgentClient
from examples.event_stream.agent import adder
from examples.event_stream.worker import TASK_QUEUE


# --8<-- [start:follow]
async def follow(agents: AgentClient, prompt: str, *, task_queue: str = TASK_QUEUE) -> list[str]:
    """Each event of a new run, printed as `offset type`, until the run's last; their types."""
    run = await agents.start(
        adder, prompt, id=f"adder-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    types: list[str] = []
    async for event in run.events():  # live; resume with events(after=<last offset held>)
        print(event.offset, event.type, getattr(event, "tool", "") or "")
        types.append(event.type)
    return types


# --8<-- [end:follow]


async def main(prompt: str) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    await follow(AgentClient(client), prompt)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompt")
    asyncio.run(main(parser.parse_args().prompt))
