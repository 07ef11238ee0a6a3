"""Tell the assistant something as one user, ask about it later in another run.

python -m examples.memory.chat user-42 "I prefer window seats"
python -m examples.memory.chat user-42 "Which seat do I like?"
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid

from temporalio.client import Client

from durable_agents import AgentClient
from examples.memory.agent import assistant
from examples.memory.worker import TASK_QUEUE


# --8<-- [start:tell]
async def tell(agents: AgentClient, user: str, text: str, *, task_queue: str = TASK_QUEUE) -> str:
    """One run of the assistant with `user`'s memory; its answer."""
    run = await agents.start(
        assistant,
        text,
        id=f"memory-{uuid.uuid4().hex[:8]}",
        task_queue=task_queue,
        memory_scope=user,  # whose memory the run may use
    )
    return (await run.result()).answer


# --8<-- [end:tell]


async def main(user: str, text: str) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    print(await tell(AgentClient(client), user, text))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("user", help="the memory scope: letters, digits and _.:@/-")
    parser.add_argument("text")
    options = parser.parse_args()
    asyncio.run(main(options.user, options.text))
