"""Temporal's agent harness peer's worker, wired as the package's README ("Running a worker —
one plugin") and `examples/openai_hello/worker.py` show: the harness's vendored
`OpenAIAgentsPlugin` with its streaming seam (`stream_to_provider`, `harness_observer_factory`;
start-to-close 2 min and heartbeat 30 s in the example, here our 120 s and retry policy), then
`AgentHarnessPlugin(tools=...)` last, whose data converter offloads large payloads to local
storage (its default). The model is the fake server's Chat Completions endpoint.

    <peer venv>/bin/python -m bench.peers.workers.harness_worker --address A --task-queue Q \
        [--variant docs|pt]
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bench.peers.workers import common
from bench.peers.workers.harness_workflows import TOOLS, WORKFLOWS


def plugins(variant: str) -> list[Any]:
    from agents.models.openai_provider import OpenAIProvider
    from openai import AsyncOpenAI
    from temporal_agent_harness.ai_sdks.openai_agents import (
        ModelActivityParameters,
        OpenAIAgentsPlugin,
    )
    from temporal_agent_harness.ai_sdks.openai_agents_harness import (
        harness_observer_factory,
        stream_to_provider,
    )
    from temporal_agent_harness.plugin import AgentHarnessPlugin

    provider = OpenAIProvider(openai_client=AsyncOpenAI(max_retries=0), use_responses=False)
    params = ModelActivityParameters(
        start_to_close_timeout=common.MODEL_TIMEOUT,
        heartbeat_timeout=timedelta(seconds=30),
        retry_policy=common.MODEL_RETRY,
        stream_to_provider=stream_to_provider,
    )
    return [
        OpenAIAgentsPlugin(
            model_params=params, model_provider=provider, observer_factory=harness_observer_factory
        ),
        AgentHarnessPlugin(tools=list(TOOLS.values())),
    ]


if __name__ == "__main__":
    common.serve_with(plugins, WORKFLOWS)
