"""Ask for a quote and get a `Quote` back, or why there is none.

python -m examples.typed_output.quote "17 shirts, please"
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid

from temporalio.client import Client

from durable_agents import AgentClient
from examples.typed_output.agent import Quote, quoter
from examples.typed_output.worker import TASK_QUEUE


# --8<-- [start:quote]
async def quote(agents: AgentClient, request: str, *, task_queue: str = TASK_QUEUE) -> Quote:
    """The quote for `request`, validated; a `ValueError` naming why when the model gave none."""
    run = await agents.start(
        quoter, request, id=f"quote-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    result = await run.result()
    if result.output is None:
        raise ValueError(f"no quote ({result.stop_reason}): {'; '.join(result.output_errors)}")
    return Quote.model_validate(result.output)


# --8<-- [end:quote]


async def main(request: str) -> None:
    client = await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    print(await quote(AgentClient(client), request))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("request")
    asyncio.run(main(parser.parse_args().request))
