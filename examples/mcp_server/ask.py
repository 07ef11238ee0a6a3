"""Ask the surveyor something and print each MCP tool call of its run.

python -m examples.mcp_server.ask "How many feet is 3 km?"
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid

from temporalio.client import Client

from durable_agents import AgentClient
from examples.mcp_server.agent import surveyor
from examples.mcp_server.worker import TASK_QUEUE


async def ask(agents: AgentClient, question: str, *, task_queue: str = TASK_QUEUE) -> str:
    """The surveyor's answer, after printing each tool call with its result."""
    run = await agents.start(
        surveyor, question, id=f"surveyor-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    result = await run.result()
    for step in result.steps:
        print(f"  {step.tool} {step.args} -> {step.observation}")
    return result.answer


async def main(question: str) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    print(await ask(AgentClient(client), question))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    asyncio.run(main(parser.parse_args().question))
