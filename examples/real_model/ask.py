"""Ask the clock something; print the answer, the model that gave it and the tokens spent.

python -m examples.real_model.ask "What time is it in Tokyo when it is noon in Paris?"
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid

from temporalio.client import Client

from durable_agents import AgentClient
from examples.real_model.agent import clock
from examples.real_model.worker import TASK_QUEUE


async def ask(agents: AgentClient, question: str, *, task_queue: str = TASK_QUEUE) -> str:
    """The clock's answer, with the model that answered and the tokens, and the run's id."""
    run_id = f"clock-{uuid.uuid4().hex[:8]}"
    run = await agents.start(clock, question, id=run_id, task_queue=task_queue)
    result = await run.result()
    usage = result.usage
    print(f"{run_id}: {result.model}, {usage.total_tokens} tokens, {len(result.steps)} tool calls")
    return result.answer


async def main(question: str) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    print(await ask(AgentClient(client), question))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    asyncio.run(main(parser.parse_args().question))
