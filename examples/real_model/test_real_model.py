"""The clock on an OpenAI-compatible server, as a real model would serve it: the real `openai`
client of the worker talks HTTP to the scripted server of `durable_agents.testing.fake_openai`
(what `make test` runs instead of a real model), configured only through the worker's
environment. The key reaches the server and nothing else."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from durable_agents.testing import AgentTestEnvironment
from durable_agents.testing.fake_openai import FakeOpenAIServer, call, text, tool_calls
from examples.real_model.agent import clock
from examples.real_model.ask import ask

KEY = "sk-example-not-a-real-key"


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("MODEL", "scripted-model")
        yield server


async def test_the_worker_environment_picks_the_model_and_the_key_stays_there(
    model_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    model_server.enqueue(
        tool_calls(call("utc_offset", {"city": "Paris"}), call("utc_offset", {"city": "Tokyo"})),
        text("When it is noon in Paris it is 20:00 in Tokyo."),
    )
    async with AgentTestEnvironment.start([clock]) as env:
        question = "Noon in Paris is what time in Tokyo?"
        answer = await ask(env.agents, question, task_queue=env.task_queue)
        run_id = re.search(r"(clock-\w+):", capsys.readouterr().out)
        assert run_id is not None
        history = await env.client.get_workflow_handle(run_id.group(1)).fetch_history()
    assert answer == "When it is noon in Paris it is 20:00 in Tokyo."
    first, second = model_server.requests
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert first["model"] == "scripted-model"
    assert [m["content"] for m in second["messages"] if m["role"] == "tool"] == ["1", "9"]
    assert KEY not in history.to_json()
