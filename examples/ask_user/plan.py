"""Ask the caterer for a plan and answer its questions from the terminal.

python -m examples.ask_user.plan "Order pizza for the team"
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid
from collections.abc import Callable

from temporalio.client import Client

from durable_agents import AgentClient, RunHandle
from examples.ask_user.agent import caterer
from examples.ask_user.worker import TASK_QUEUE


# --8<-- [start:answer]
async def answer_questions(run: RunHandle, answer: Callable[[str], str]) -> None:
    """Reply to each question the run asks, as it asks it, until nothing waits."""
    while (request := await run.next_request()) is not None:
        if request.kind == "question" and request.question is not None:
            await run.reply(request.call_id, answer(request.question), by="the user")


# --8<-- [end:answer]


async def plan(
    agents: AgentClient,
    prompt: str,
    answer: Callable[[str], str],
    *,
    task_queue: str = TASK_QUEUE,
) -> str:
    """The caterer's answer to `prompt`, its questions answered by `answer`."""
    run = await agents.start(
        caterer, prompt, id=f"caterer-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    await answer_questions(run, answer)
    return (await run.result()).answer


async def main(prompt: str) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    print(await plan(AgentClient(client), prompt, lambda question: input(f"{question} ")))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompt")
    asyncio.run(main(parser.parse_args().prompt))
