"""Ask the guide; this program is the client that runs `get_location`.

python -m examples.client_tools.ask "What can I do tonight?" --city Lyon
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid
from collections.abc import Callable
from typing import Any

from temporalio.client import Client

from durable_agents import AgentClient, RunHandle
from examples.client_tools.agent import guide
from examples.client_tools.worker import TASK_QUEUE


# --8<-- [start:client]
async def run_client_tools(run: RunHandle, tools: dict[str, Callable[..., Any]]) -> None:
    """Run each client tool call the run waits for, and send its result back."""
    while (request := await run.next_request()) is not None:
        if request.kind == "client_tool":
            result = tools[request.tool](**request.args)
            await run.tool_result(request.call_id, result=result, by="this device")


# --8<-- [end:client]


async def ask(
    agents: AgentClient, question: str, city: str, *, task_queue: str = TASK_QUEUE
) -> str:
    """The guide's answer, its location calls answered with `city`."""
    run = await agents.start(
        guide, question, id=f"guide-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    await run_client_tools(run, {"get_location": lambda: {"city": city}})
    return (await run.result()).answer


async def main(question: str, city: str) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    print(await ask(AgentClient(client), question, city))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--city", default="Lyon", help="what get_location answers")
    options = parser.parse_args()
    asyncio.run(main(options.question, options.city))
