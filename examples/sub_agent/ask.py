"""Ask the editor something: start its run, wait for the answer, and print which child runs
the fact finder's work went to.

    python -m examples.sub_agent.ask "Explain what a Temporal activity is"
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid

from temporalio.client import Client

from durable_agents import AgentClient
from examples.sub_agent.agents import editor
from examples.sub_agent.worker import TASK_QUEUE


async def ask(agents: AgentClient, question: str, *, task_queue: str = TASK_QUEUE) -> str:
    """The editor's answer to `question`, after printing each hand-off to a child run."""
    run = await agents.start(
        editor, question, id=f"editor-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    result = await run.result()
    for step in result.steps:
        if step.child_workflow_id:
            print(f"  {step.tool} ran as {step.child_workflow_id}: {step.observation}")
    return result.answer


async def main(question: str) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    print(await ask(AgentClient(client), question))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    asyncio.run(main(parser.parse_args().question))
