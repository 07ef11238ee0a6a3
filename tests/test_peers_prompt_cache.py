"""Issue 36 part 1 on the peers (`bench.peers.cache`, workload 6 of `make bench-peers`): the
metering proxy every system's model calls go through answers a streamed request as a stream
(the harness peer streams its calls), records each request's prompt and cached tokens from the
server's own answer, and the workload's table shows them per system and case.

The whole workload on the peers needs their venvs (`bench/peers/venvs.sh`): its smoke run is
`make bench-peers PEERS_ARGS='--quick --only 6'`, against the fake server acting as a cache."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from bench import prompt_cache
from bench.peers import cache, report
from durable_agents.contracts.usage import TokenUsage
from durable_agents.testing import fake_openai as fake


@pytest.fixture
def proxy() -> Iterator[prompt_cache.ScriptedProxy]:
    """The tool run's script behind the proxy, the fake server acting as llama-server's cache."""
    with (
        prompt_cache.fake_upstream("fake") as upstream,
        prompt_cache.scripted_proxy(upstream, prompt_cache.tool_run_script(2)) as scripted,
    ):
        yield scripted


def ask(proxy: prompt_cache.ScriptedProxy, messages: list[Any], stream: bool) -> Any:
    client = openai.OpenAI(base_url=proxy.base_url, api_key="none", max_retries=0)
    kwargs: dict[str, Any] = {"model": "local", "messages": messages}
    if stream:
        kwargs |= {"stream": True, "stream_options": {"include_usage": True}}
    return client.chat.completions.create(**kwargs)


def test_a_streamed_call_gets_the_scripted_reply_as_a_stream_with_the_servers_timings(
    proxy: prompt_cache.ScriptedProxy,
) -> None:
    chunks = list(ask(proxy, [{"role": "user", "content": "Add one twice."}], stream=True))
    calls = [
        c for chunk in chunks for choice in chunk.choices for c in choice.delta.tool_calls or []
    ]
    assert [(c.function.name, c.function.arguments) for c in calls] == [
        ("calculator", '{"expression": "0 + 1"}')
    ]
    assert [choice.finish_reason for c in chunks for choice in c.choices][-1] == "tool_calls"
    last = chunks[-1]
    assert last.usage is not None and last.usage.prompt_tokens > 0
    assert (last.model_extra or {})["timings"]["cache_n"] == 0  # the first prompt the server saw


def test_the_proxy_meters_each_request_from_the_servers_answer(
    proxy: prompt_cache.ScriptedProxy,
) -> None:
    first = [{"role": "user", "content": "Add one twice, one call at a time."}]
    reply = ask(proxy, first, stream=False)
    second = [*first, reply.choices[0].message.model_dump(exclude_none=True)]
    second.append({"role": "tool", "tool_call_id": "call0000", "content": "1"})
    ask(proxy, second, stream=True).close()
    assert len(proxy.metered) == 2
    assert proxy.metered[0].cached_prompt_tokens == 0
    # the second prompt starts with the first: the fake cache served that much of it
    assert 0 < proxy.metered[1].cached_prompt_tokens < proxy.metered[1].prompt_tokens
    assert proxy.metered[1].cached_prompt_tokens >= proxy.metered[0].prompt_tokens - 1
    assert proxy.asked == 2


def test_the_worst_reread_is_the_call_that_read_most_of_its_prompt_anew() -> None:
    calls = [TokenUsage(prompt_tokens=p, cached_prompt_tokens=c) for p, c in CALLS]
    worst = prompt_cache.worst_reread(calls)
    assert worst == {"call": 3, "prompt_tokens": 250, "read_anew": 200, "full_prompt_rereads": 0.8}
    assert prompt_cache.cut_calls(calls) == [2]


CALLS = [(400, 0), (500, 400), (250, 50), (300, 250)]
"""Prompt and cached tokens a call: the third call's prompt was cut (a compaction)."""


def test_the_table_has_a_row_per_system_and_case_with_its_share_or_its_error() -> None:
    calls = [TokenUsage(prompt_tokens=p, cached_prompt_tokens=c) for p, c in CALLS]
    shares = prompt_cache.shares(calls, prompt_cache.cut_calls(calls), [False, False, True, False])
    measured = {
        "model_server": "http://127.0.0.1:8080/v1",
        "steps": 30,
        "turns": 20,
        "systems": {
            "ours": {"tool_run": {"max_context_tokens": 2000, **shares}},
            "openai-agents": {"session": {"error": "RuntimeError: no session"}},
            "pydantic-ai": {"tool_run": {**shares, "error": "WorkflowFailureError: 400"}},
        },
    }
    assert cache.rows(measured) == [
        [
            "ours",
            "30-step tool run",
            "4",
            "1,050",
            "700",
            "66.7% (81.2% without 1 after another client)",
            "call 3: 0.800",
        ],
        [
            "openai-agents",
            "20-turn session",
            "–",
            "–",
            "–",
            "cannot run: RuntimeError: no session",
            "–",
        ],
        [
            "pydantic-ai",
            "30-step tool run",
            "4",
            "1,050",
            "700",
            "66.7% (81.2% without 1 after another client); stopped after 4 calls: "
            "WorkflowFailureError: 400",
            "call 3: 0.800",
        ],
    ]
    printed = report.text({"servers": {"tuned": {"cache": measured}}})
    assert "6 prompt cache (model server: http://127.0.0.1:8080/v1)" in printed
    assert "66.7% (81.2% without 1 after another client)" in printed


def test_a_request_the_server_refuses_reaches_the_client_as_it_came() -> None:
    """llama-server refuses a prompt longer than its context with a 400: the client (a peer's
    model activity) gets it at once, not after the proxy's ten minutes of retries; the
    scripted step is not taken and nothing is metered."""
    too_long = "the request exceeds the available context size"
    with fake.FakeOpenAIServer() as server:
        server.set_handler(lambda body: fake.error(400, too_long, type="exceed_context_size_error"))
        upstream = server.base_url.rstrip("/")
        with prompt_cache.scripted_proxy(upstream, prompt_cache.tool_run_script(2)) as proxy:
            with pytest.raises(openai.BadRequestError, match=too_long):
                ask(proxy, [{"role": "user", "content": "Add one twice."}], stream=True)
            assert (proxy.asked, proxy.metered) == (0, [])
