"""Model names with a provider (`local/tiny`): the worker sends each to its provider's endpoint
with that provider's key. Two fake OpenAI-compatible servers, the real client, a real server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.model_router import ModelRouter, split_provider
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from tests.conftest import FAKE_MODEL, SECRET_API_KEY, history_json, started_workers

LOCAL_KEY = "sk-local-PROVIDER-KEY-never-in-history"


def test_split_provider() -> None:
    known = {"ollama": object(), "deepseek": object()}
    assert split_provider("ollama/qwen2.5", known) == ("ollama", "qwen2.5")
    assert split_provider("deepseek/deepseek-chat", known) == ("deepseek", "deepseek-chat")
    assert split_provider("meta-llama/Llama-3.1-8B", known) == (None, "meta-llama/Llama-3.1-8B")
    assert split_provider("gpt-4o", known) == (None, "gpt-4o")
    assert split_provider("ollama/", known) == (None, "ollama/")


@pytest.fixture
async def two_endpoints(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[tuple[str, FakeOpenAIServer, FakeOpenAIServer]]:
    with FakeOpenAIServer() as default_server, FakeOpenAIServer() as local_server:
        router = ModelRouter(
            OpenAIChatModel(
                api_key=SECRET_API_KEY, base_url=default_server.base_url, default_model=FAKE_MODEL
            ),
            {
                "local": OpenAIChatModel(
                    api_key=LOCAL_KEY, base_url=local_server.base_url, default_model="x"
                )
            },
        )
        async with AsyncExitStack() as stack:
            queue = await started_workers(stack, temporal_env.client, router, tmp_path)
            yield queue, default_server, local_server
        await router.close()


async def run(env: WorkflowEnvironment, queue: str, payload: dict[str, object]) -> AgentResult:
    handle = await env.client.start_workflow(
        "AgentWorkflow",
        payload,
        id=f"agent-{uuid.uuid4()}",
        task_queue=queue,
        result_type=AgentResult,
    )
    result = await handle.result()
    assert SECRET_API_KEY not in await history_json(handle)
    assert LOCAL_KEY not in await history_json(handle)
    return result


async def test_a_provider_name_goes_to_its_endpoint_with_its_key(
    temporal_env: WorkflowEnvironment,
    two_endpoints: tuple[str, FakeOpenAIServer, FakeOpenAIServer],
) -> None:
    queue, default_server, local_server = two_endpoints
    local_server.enqueue(fake.text("from local"))
    result = await run(temporal_env, queue, {"prompt": "hi", "model": "local/tiny"})

    assert result.answer == "from local"
    assert result.model == "local/tiny"  # named as the run named it, for records and prices
    [request] = local_server.requests
    assert request["model"] == "tiny"
    assert request.headers["authorization"] == f"Bearer {LOCAL_KEY}"
    assert default_server.request_count == 0


async def test_an_unknown_prefix_goes_to_the_default_endpoint(
    temporal_env: WorkflowEnvironment,
    two_endpoints: tuple[str, FakeOpenAIServer, FakeOpenAIServer],
) -> None:
    queue, default_server, local_server = two_endpoints
    default_server.enqueue(fake.text("from default"))
    result = await run(temporal_env, queue, {"prompt": "hi", "model": "meta-llama/Llama-3"})

    assert result.answer == "from default"
    assert default_server.requests[0]["model"] == "meta-llama/Llama-3"
    assert default_server.requests[0].headers["authorization"] == f"Bearer {SECRET_API_KEY}"
    assert local_server.request_count == 0


async def test_a_provider_model_falls_back_to_another_provider(
    temporal_env: WorkflowEnvironment,
    two_endpoints: tuple[str, FakeOpenAIServer, FakeOpenAIServer],
) -> None:
    queue, default_server, local_server = two_endpoints
    local_server.set_handler(lambda body: fake.error(404, "model 'tiny' not found"))
    default_server.enqueue(fake.text("from the cloud"))
    result = await run(
        temporal_env,
        queue,
        {"prompt": "hi", "model": "local/tiny", "fallback_models": ["gpt-4o-mini"]},
    )

    assert result.answer == "from the cloud"
    [call] = result.model_calls
    assert [f.model for f in call.failed_models] == ["local/tiny"]
    assert "model 'tiny' not found" in call.failed_models[0].error
