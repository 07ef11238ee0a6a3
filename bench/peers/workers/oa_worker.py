"""The OpenAI Agents SDK peer's worker, configured as the integration's README recommends
(`OpenAIAgentsPlugin` on the client, `ModelActivityParameters` with a start-to-close timeout;
the plugin's model activity, whose OpenAI client makes no retries of its own). The model is the
fake server's Chat Completions endpoint (`OpenAIProvider(use_responses=False)`), with
`max_retries=0` as the plugin's own default client has.

    <peer venv>/bin/python -m bench.peers.workers.oa_worker --address A --task-queue Q \
        [--variant docs|la+pt]

`la+pt`: the model calls as local activities (`use_local_activity=True`) and the bench modules
passed through the sandbox, the levers ours uses that this peer can switch on.
"""

from __future__ import annotations

from typing import Any

from bench.peers.workers import common
from bench.peers.workers.oa_workflows import ACTIVITIES, WORKFLOWS


def plugins(variant: str) -> list[Any]:
    from agents.models.openai_provider import OpenAIProvider
    from openai import AsyncOpenAI
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin

    provider = OpenAIProvider(openai_client=AsyncOpenAI(max_retries=0), use_responses=False)
    params = ModelActivityParameters(
        start_to_close_timeout=common.MODEL_TIMEOUT,
        retry_policy=common.MODEL_RETRY,
        use_local_activity="la" in variant.split("+"),
    )
    return [OpenAIAgentsPlugin(model_params=params, model_provider=provider)]


if __name__ == "__main__":
    common.serve_with(plugins, WORKFLOWS, ACTIVITIES)
