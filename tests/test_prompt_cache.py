"""A prompt that keeps its prefix (issue 36, part 1), on a real Temporal dev server, the real
worker and the real `openai` client against the fake model server.

- What a run sends grows by appending: each request's tools and messages, serialised, start
  with the previous request's (a one-shot tool run, a session across turns), so a provider's
  prompt cache serves everything it has already read.
- When the context window is full, trimming moves in large steps: the prefix breaks once per
  step, not on every call.
- The prompt tokens a provider served from its cache (OpenAI's
  `usage.prompt_tokens_details.cached_tokens`, llama-server's `timings.cache_n`) are recorded per
  call, summed in the run's usage, and shown in the event stream's `model_call_finished`.
"""

from __future__ import annotations

import itertools
import json
import uuid
from typing import Any, Literal

import pytest

from durable_agents.activities.streaming import usage_from
from durable_agents.cli.evaluation import report
from durable_agents.cli.evaluation.scoring import summarize
from durable_agents.contracts.session import MemoryTurn, TurnResult
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.memory import memory_turn, remember
from durable_agents.runtime.event_stream import read_events
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import RecordedRequest
from tests.conftest import AgentHarness
from tests.session_support import echo_model, send_with_start
from tests.test_eval_scoring import record
from tests.test_real_quirks import reply_to


def prompt_text(request: RecordedRequest) -> str:
    """The request's prompt as a chat template reads it: the tools, then each message, as the
    JSON the client sent (its key order kept)."""
    body = request.body
    return json.dumps(body.get("tools", [])) + "".join(json.dumps(m) for m in body["messages"])


def prefix_breaks(requests: list[RecordedRequest]) -> list[int]:
    """The indexes of the requests whose prompt does not start with the previous one's."""
    prompts = [prompt_text(r) for r in requests]
    return [i for i in range(1, len(prompts)) if not prompts[i].startswith(prompts[i - 1])]


def calculator_steps(count: int, padding: int = 0) -> Any:
    """A model that calls the calculator `count` times, one call per reply, then answers;
    `padding` characters of reasoning-free text beside each call make the messages longer."""

    asked = iter(range(10**6))

    def reply(body: dict[str, Any]) -> Any:
        done = next(asked)  # (not the tool messages it is sent: trimming leaves some out)
        if done >= count:
            return fake.text("All done.")
        return fake.tool_calls(
            fake.call("calculator", {"expression": f"{done} + 1"}),
            content=("x" * padding) or None,
        )

    return reply


async def test_a_tool_run_only_appends_to_its_prompt(agent: AgentHarness) -> None:
    agent.fake.set_handler(calculator_steps(6))
    result, _ = await agent.run({"prompt": "Count to six.", "tools": ["calculator"]})
    assert result.answer == "All done."
    requests = agent.fake.requests
    assert len(requests) == 7
    assert prefix_breaks(requests) == []


async def test_a_session_only_appends_to_its_prompt_across_turns(agent: AgentHarness) -> None:
    agent.fake.set_handler(echo_model)
    session_id = f"session-{uuid.uuid4()}"
    for text in ("first question", "second question", "third question", "fourth question"):
        turn, _ = await send_with_start(agent.client, session_id, agent.task_queue, text)
        assert turn.answer == f"answer to: {text}"
    assert len(agent.fake.requests) == 4
    assert prefix_breaks(agent.fake.requests) == []


async def test_trimming_breaks_the_prefix_in_large_steps(agent: AgentHarness) -> None:
    """Forty calls that overflow a 1,000-token window many times over: each time the window is
    full a quarter of it goes at once, so the prefix breaks a handful of times, not once per
    call from the first overflow on."""
    agent.fake.set_handler(calculator_steps(40, padding=200))
    result, _ = await agent.run(
        {
            "prompt": "Count to forty.",
            "tools": ["calculator"],
            "max_context_tokens": 1_000,
            "max_iterations": 50,
        }
    )
    assert result.answer == "All done."
    requests = agent.fake.requests
    assert len(requests) == 41
    breaks = prefix_breaks(requests)
    assert 0 < len(breaks) <= 12, breaks
    # the system message, the tools and the prompt never change
    first = requests[0].body
    for request in requests:
        assert request.body["tools"] == first["tools"]
        assert request.body["messages"][:2] == first["messages"][:2]


@pytest.mark.parametrize("form", ["openai", "llama-server"])
async def test_cached_prompt_tokens_are_recorded_summed_and_streamed(
    agent: AgentHarness, form: Literal["openai", "llama-server"]
) -> None:
    agent.fake.prompt_cache = form
    agent.fake.set_handler(calculator_steps(3))
    result, handle = await agent.run({"prompt": "Count to three.", "tools": ["calculator"]})
    calls = [call.usage for call in result.model_calls]
    assert len(calls) == 4
    assert calls[0].cached_prompt_tokens == 0  # the cache held nothing of this run yet
    for before, usage in itertools.pairwise(calls):
        # each call's prompt starts with the previous one's: all of it came from the cache
        assert usage.cached_prompt_tokens >= before.prompt_tokens - 1 > 0
        assert usage.cached_prompt_tokens < usage.prompt_tokens
    assert result.usage.cached_prompt_tokens == sum(u.cached_prompt_tokens for u in calls)
    events, _ = await read_events(agent.client, handle.id)
    streamed = [e.model_dump()["usage"] for e in events if e.type == "model_call_finished"]
    assert [u.get("cached_prompt_tokens", 0) for u in streamed] == [
        u.cached_prompt_tokens for u in calls
    ]


async def test_a_session_turn_reports_its_cached_tokens(agent: AgentHarness) -> None:
    agent.fake.prompt_cache = "llama-server"
    agent.fake.set_handler(echo_model)
    session_id = f"session-{uuid.uuid4()}"
    turns: list[TurnResult] = []
    for text in ("one", "two", "three"):
        turn, _ = await send_with_start(agent.client, session_id, agent.task_queue, text)
        turns.append(turn)
    assert turns[0].usage.cached_prompt_tokens == 0
    for before, turn in itertools.pairwise(turns):
        assert turn.usage.cached_prompt_tokens >= before.usage.prompt_tokens - 1 > 0


def test_usage_reads_both_providers_forms() -> None:
    openai_form = {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "total_tokens": 105,
        "prompt_tokens_details": {"cached_tokens": 64},
    }
    assert usage_from(openai_form) == TokenUsage(
        prompt_tokens=100, completion_tokens=5, total_tokens=105, cached_prompt_tokens=64
    )
    plain = {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
    llama = usage_from(plain, {"cache_n": 90, "prompt_n": 10})
    assert llama is not None and llama.cached_prompt_tokens == 90
    assert llama.cache_share == 0.9
    # a null `prompt_tokens_details` (some servers) and no timings: nothing was cached
    none_said = usage_from({**plain, "prompt_tokens_details": None})
    assert none_said is not None and none_said.cached_prompt_tokens == 0


def test_usage_recorded_before_the_field_reads_back_the_same() -> None:
    old = '{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}'
    usage = TokenUsage.model_validate_json(old)
    assert usage.cached_prompt_tokens == 0
    assert usage.model_dump_json() == old
    summed = usage + TokenUsage(prompt_tokens=20, cached_prompt_tokens=12)
    assert summed.cached_prompt_tokens == 12 and summed.prompt_tokens == 30


def test_agent_eval_shows_the_share_of_prompt_tokens_cached() -> None:
    """The headline and the table show the share when a provider reported cached tokens, and
    stay as they were when none did (the demo model)."""
    cached = [
        record(label="local", usage=TokenUsage(prompt_tokens=1_000, cached_prompt_tokens=900)),
        record(label="local", usage=TokenUsage(prompt_tokens=1_000, cached_prompt_tokens=500)),
    ]
    summary = summarize(cached)
    assert summary.by_model["local"].prompt_cache_share == 0.7
    [headline] = report.headline_lines(summary)
    assert "avg tokens 0 (70% of prompt tokens cached) · " in headline
    table = report.table_lines(summary)
    header = table[0].split()
    assert header[header.index("tokens") + 1] == "cached"
    assert table[-1].split()[8] == "70%"
    plain = summarize([record(label="demo", usage=TokenUsage(prompt_tokens=10))])
    assert "cached" not in report.headline_lines(plain)[0]
    assert "cached" not in report.table_lines(plain)[0]


def test_the_memory_window_moves_in_large_steps() -> None:
    """Past `memory_max_turns` (20) the oldest quarter goes at once, so the remembered turns
    that open every prompt change once in five turns, not every turn; a small window still
    drops one turn at a time, and no window keeps more than its maximum."""
    memory: list[MemoryTurn] = []
    firsts = []
    for number in range(1, 41):
        turn = memory_turn(number, f"question {number}", f"answer {number}", [], "answers")
        memory = remember(memory, turn, max_turns=20, max_tokens=None)
        assert len(memory) <= 20
        firsts.append(memory[0].turn)
    assert firsts[:20] == [1] * 20
    assert firsts[20:] == [6] * 5 + [11] * 5 + [16] * 5 + [21] * 5
    small: list[MemoryTurn] = []
    for number in range(1, 5):
        turn = memory_turn(number, "q", "a", [], "answers")
        small = remember(small, turn, max_turns=2, max_tokens=None)
    assert [t.turn for t in small] == [3, 4]
    assert (
        remember(small, memory_turn(5, "q", "a", [], "answers"), max_turns=0, max_tokens=None) == []
    )


@pytest.mark.parametrize(
    ("name", "cached", "prompt"),
    [("answer_after_tool_plain", 420, 510), ("call_as_text_streamed", 434, 435)],
)
async def test_a_real_llama_server_reply_records_its_cached_tokens(
    fake_model: fake.FakeOpenAIServer, name: str, cached: int, prompt: int
) -> None:
    """llama-server's own replies (recorded by `make record-real`, plain and streamed), read by
    `OpenAIChatModel`: the cached prompt tokens it reported."""
    reply = await reply_to(fake_model, name)
    assert (reply.usage.cached_prompt_tokens, reply.usage.prompt_tokens) == (cached, prompt)
