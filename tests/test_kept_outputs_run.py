"""Kept tool outputs through a real worker: two long outputs in one round, each recorded once
when the worker keeps both, and a run that still gets both to the model when the worker has
lost one of them (the delta misses and the workflow sends the whole conversation), and a worker
without cache affinity, which names itself in its replies instead (`ModelReply.answered_by`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.api.history.v1 import HistoryEvent
from temporalio.testing import WorkflowEnvironment

import testkit.fixed_output  # noqa: F401  (registers fixed_output)
from durable_agents.activities.kept_outputs import KEEP_MIN_CHARS, KeptOutputs
from durable_agents.runtime.workers import WorkerTuning
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from testkit.bench_model import rounds_since_user
from testkit.fixed_output import fixed_text
from testkit.history_copies import event_labels, full_copies
from tests.conftest import AgentHarness, agent_harness

CHARS = 4 * KEEP_MIN_CHARS


def two_outputs(body: dict[str, Any]) -> fake.ReplyLike:
    _, rounds = rounds_since_user(body["messages"])
    if rounds >= 1:
        return fake.text("read both")
    return fake.tool_calls(
        fake.call("fixed_output", {"n": 1, "chars": CHARS}),
        fake.call("fixed_output", {"n": 2, "chars": CHARS}),
    )


def model_replies(events: list[HistoryEvent]) -> list[bytes]:
    return [
        e.activity_task_completed_event_attributes.result.payloads[0].data
        for e, label in zip(events, event_labels(events), strict=True)
        if label == "ActivityTaskCompleted call_model"
    ]


def tool_contents_sent(agent: AgentHarness) -> list[str]:
    """The tool messages of the model's last request, as the model got them."""
    last = agent.fake.requests[-1]["messages"]
    return [m["content"] for m in last if m["role"] == "tool"]


async def run_two(agent: AgentHarness) -> list[HistoryEvent]:
    agent.fake.set_handler(two_outputs)
    result, handle = await agent.run({"prompt": "Read both.", "tools": ["fixed_output"]})
    assert result.stop_reason == "completed" and result.answer == "read both", result
    assert tool_contents_sent(agent) == [fixed_text(1, CHARS), fixed_text(2, CHARS)]
    return list((await handle.fetch_history()).events)


async def test_outputs_the_worker_keeps_are_recorded_once(agent: AgentHarness) -> None:
    events = await run_two(agent)
    for n in (1, 2):
        copies = dict(full_copies(events, fixed_text(n, CHARS)))
        assert copies == {"ActivityTaskCompleted fixed_output": 1, "WorkflowExecutionCompleted": 1}
    assert not any(b'"context_cache_miss":true' in r for r in model_replies(events))


async def test_a_worker_that_lost_an_output_misses_and_the_model_still_gets_both(
    agent: AgentHarness,
) -> None:
    agent.cache.outputs = KeptOutputs(max_outputs=1)  # keeping the second output drops the first
    misses = agent.cache.misses
    events = await run_two(agent)
    replies = model_replies(events)
    assert sum(b'"context_cache_miss":true' in r for r in replies) == 1, replies
    assert agent.cache.misses == misses + 1
    for n in (1, 2):  # the resent conversation carries both
        copies = dict(full_copies(events, fixed_text(n, CHARS)))
        assert copies.get("ActivityTaskScheduled call_model") == 1, copies


async def test_a_run_that_sends_its_whole_conversation_asks_no_worker_to_keep_outputs(
    agent: AgentHarness,
) -> None:
    agent.fake.set_handler(two_outputs)
    kept_before = len(agent.cache.outputs)
    payload = {"prompt": "Read both.", "tools": ["fixed_output"], "context_transfer": "full"}
    result, handle = await agent.run(payload)
    assert result.answer == "read both", result
    events = list((await handle.fetch_history()).events)
    assert not any(b"kept_by" in e.SerializeToString() for e in events)
    assert len(agent.cache.outputs) == kept_before
    for n in (1, 2):  # the whole conversation, in the second model call
        assert dict(full_copies(events, fixed_text(n, CHARS)))["ActivityTaskScheduled call_model"]


async def test_a_worker_without_cache_affinity_keeps_outputs_too(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The embedded dev server's default (`make run`): no queue of its own, so its replies name
    it in `answered_by`; the dev server's eager dispatch keeps the calls on it."""
    tuning = WorkerTuning(cache_affinity=False)
    async with agent_harness(temporal_env, fake_model, tmp_path, tuning) as agent:
        events = await run_two(agent)
    for n in (1, 2):
        copies = dict(full_copies(events, fixed_text(n, CHARS)))
        assert copies == {"ActivityTaskCompleted fixed_output": 1, "WorkflowExecutionCompleted": 1}
    replies = model_replies(events)
    assert all(b'"answered_by"' in r and b'"worker_queue"' not in r for r in replies), replies
