"""The Pydantic AI peer's worker, as https://ai.pydantic.dev/temporal shows it: a client with
`PydanticAIPlugin()` (its Pydantic payload converter, the agents' activities registered from
the workflow's `__pydantic_ai_agents__`), a `Worker` with the workflow.

    <peer venv>/bin/python -m bench.peers.workers.pai_worker --address A --task-queue Q \
        [--variant docs|wf+pt]

`wf+pt`: the same workflows (the client starts the one whose agent runs `calculator` in the
workflow, `PydanticAICalcWf`), with the bench modules passed through the sandbox as well.
"""

from __future__ import annotations

import argparse
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from bench.peers.workers import common
from bench.peers.workers.pai_workflows import WORKFLOWS


def plugins(variant: str) -> list[Any]:
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin

    return [PydanticAIPlugin()]


async def build(args: argparse.Namespace) -> Worker:
    client = await Client.connect(args.address, plugins=plugins(args.variant))
    return Worker(
        client,
        task_queue=args.task_queue,
        workflows=WORKFLOWS,
        **common.sandbox_runner(args.variant),
    )


if __name__ == "__main__":
    common.serve(build)
