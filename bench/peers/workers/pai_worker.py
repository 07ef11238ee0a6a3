"""The Pydantic AI peer's worker, as https://ai.pydantic.dev/temporal shows it: a client with
`PydanticAIPlugin()` (its Pydantic payload converter, the agents' activities registered from
the workflow's `__pydantic_ai_agents__`), a `Worker` with the workflow.

    <peer venv>/bin/python -m bench.peers.workers.pai_worker --address A --task-queue Q \
        [--variant docs|wf+pt]

`wf+pt`: the same workflows (the client starts the one whose agent runs `calculator` in the
workflow, `PydanticAICalcWf`), with the bench modules passed through the sandbox as well.
"""

from __future__ import annotations

from typing import Any

from bench.peers.workers import common
from bench.peers.workers.pai_workflows import WORKFLOWS


def plugins(variant: str) -> list[Any]:
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin

    return [PydanticAIPlugin()]


if __name__ == "__main__":
    common.serve_with(plugins, WORKFLOWS)
