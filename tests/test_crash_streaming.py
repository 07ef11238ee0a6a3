"""Kill -9 a worker while a model reply is streaming: a fresh worker retries the model call from
scratch and the run completes with one clean reply; nothing half-streamed reaches the
conversation, the result or the activity results in history. The run's event stream announces
each model call once (`model_call_started`), a retried attempt with `model_call_retrying`, and
closes each with `model_call_finished`: a consumer that counts open calls reaches zero (issue 31
item 2), whether the killed call was retried mid-stream or the next call missed the dead
worker's context cache and went again whole.

Real `python worker.py` processes (streaming is on by default) against the session's Temporal
dev server and the fake model server, as in `tests/test_crash_recovery.py`. The fake server
holds the first stream after a few chunks, so the worker is surely mid-stream when it dies.
"""

from __future__ import annotations

import threading
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.cli.live_text import model_calls_in_flight
from durable_agents.client import RunHandle
from durable_agents.contracts.events import AgentEvent, ModelCallRetrying
from durable_agents.contracts.model_io import ModelReply
from durable_agents.runtime.event_stream import read_events
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from testkit.crash_tools import WorkerCluster, attempts_of, crash_effect
from testkit.eventually import eventually
from tests.catalog import TEST_CATALOG
from tests.conftest import activity_types
from tests.replaying import assert_replays

PARTIAL = "HALF-STREAMED draft that the killed worker was still receiving when it died"
HELD_AFTER = 6  # the role chunk and 5 pieces of 4 characters


async def model_results(client: Client, handle: WorkflowHandle[Any, Any]) -> list[ModelReply]:
    """The result of each completed `call_model` activity, from the run's history."""
    events = (await handle.fetch_history()).events
    types = {
        e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    replies = []
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = event.activity_task_completed_event_attributes
            if types[attrs.scheduled_event_id] == "call_model":
                [reply] = await client.data_converter.decode(attrs.result.payloads, [ModelReply])
                replies.append(reply)
    return replies


def quickly_retried(prompt: str, tool: str) -> dict[str, Any]:
    """A run whose killed model call is retried within seconds (3 s timeout, 3 attempts)."""
    return {"prompt": prompt, "tools": [tool], "model_timeout_seconds": 3, "model_max_attempts": 3}


def model_call_events(events: list[AgentEvent]) -> list[tuple[str, int, int]]:
    """The stream's model call events as `(type, model_call, attempt)`."""
    return [
        (e.type, getattr(e, "model_call", 0), getattr(e, "attempt", 1))
        for e in events
        if e.type.startswith("model_call_")
    ]


def open_calls(events: list[AgentEvent]) -> list[int]:
    """What a consumer that counts `model_call_started` up and `model_call_finished` down holds
    open after each of them (the CLI's and the console's live text, AG-UI's open message)."""
    held, counts = 0, []
    for event in events:
        if event.type in ("model_call_started", "model_call_finished"):
            held += 1 if event.type == "model_call_started" else -1
            counts.append(held)
    return counts


async def test_kill_while_a_reply_is_streaming(
    cluster: WorkerCluster, fake_model: FakeOpenAIServer, temporal_env: WorkflowEnvironment
) -> None:
    never = threading.Event()  # the first stream never goes on: its worker dies meanwhile
    fake_model.enqueue(
        fake.streamed(PARTIAL, piece_chars=4, hold_after=HELD_AFTER, release=never),
        fake.streamed(fake.tool_calls(fake.call("calculator", {"expression": "2 + 3"}, id="k1"))),
        fake.streamed("The answer is 5."),
    )
    first = await cluster.start_worker()
    handle = await cluster.start_run(quickly_retried("What is 2 + 3?", "calculator"))
    # The worker has received part of the reply: its heartbeat shows the text so far.
    partial = PARTIAL[: 4 * (HELD_AFTER - 1)]

    async def mid_stream() -> bool:
        calls = await model_calls_in_flight(RunHandle(cluster.client, handle.id))
        assert calls and calls[0].progress.tail == partial, calls
        return True

    await eventually(mid_stream, what="the worker to be mid-stream")
    assert fake_model.chunks_sent == HELD_AFTER

    await cluster.kill(first)
    await cluster.start_worker()
    result = await cluster.result_of(handle)
    never.set()

    assert result.answer == "The answer is 5."
    assert result.stop_reason == "completed"
    assert [(s.tool, s.observation) for s in result.steps] == [("calculator", "5")]
    # The killed call was asked again from scratch, with the same conversation.
    killed, retried, second_turn = fake_model.requests
    assert retried.messages == killed.messages
    assert all(r.body["stream"] is True for r in fake_model.requests)
    # No partial text anywhere: not in what the model was sent next, not in the result, not
    # in the recorded model replies (one per model call).
    assert PARTIAL[:12] not in str(second_turn.messages)
    assert PARTIAL[:12] not in result.model_dump_json()
    replies = await model_results(temporal_env.client, handle)
    assert len(replies) == 2
    assert all(PARTIAL[:12] not in r.model_dump_json() for r in replies)
    assert [c.name for c in replies[0].tool_calls] == ["calculator"]
    # One model activity for turn 1, completed by its second attempt.
    assert await attempts_of(handle, "call_model") == [2, 1]
    assert fake_model.errors == []
    # The stream: each call started once and finished once; the retry said so, with its attempt.
    events, _ = await read_events(temporal_env.client, handle.id)
    assert model_call_events(events) == [
        ("model_call_started", 1, 1),
        ("model_call_retrying", 1, 2),
        ("model_call_finished", 1, 1),
        ("model_call_started", 2, 1),
        ("model_call_finished", 2, 1),
    ]
    assert open_calls(events) == [1, 0, 1, 0]
    # the killed attempt's text (attempt 1) came before the retry that voids it (the retried
    # reply asks for a tool: no text)
    texts = [e for e in events if e.type == "text_delta"]
    assert texts and {(e.model_call, e.attempt) for e in texts} == {(1, 1)}
    assert "".join(e.text for e in texts) in PARTIAL
    assert events.index(texts[-1]) < [e.type for e in events].index("model_call_retrying")


async def test_a_call_after_a_worker_died_is_announced_once(
    cluster: WorkerCluster, fake_model: FakeOpenAIServer, temporal_env: WorkflowEnvironment
) -> None:
    """The worker that held the conversation dies during the second model call: the retried
    attempt, on a new worker, misses its context cache, and the call goes again whole (three
    `call_model` activities for two model calls). Before, the stream read 3 starts against 2
    ends (the whole resend, unannounced, published a start of its own)."""
    fake_model.enqueue(
        fake.tool_calls(fake.call("crash_effect", {"label": "a"}, id="c1")),
        fake.delay(120, fake.text("the killed worker never gets this")),
        fake.streamed("done after the crash, in pieces that stream", piece_chars=4),
    )
    first = await cluster.start_worker()
    handle = await cluster.start_run(quickly_retried("model crash", "crash_effect"))
    await eventually(lambda: fake_model.request_count == 2, what="the second model call")
    await cluster.kill(first)
    await cluster.start_worker()
    result = await cluster.result_of(handle)

    assert result.answer == "done after the crash, in pieces that stream"
    events, _ = await read_events(temporal_env.client, handle.id)
    calls = model_call_events(events)
    assert [c for c in calls if c[0] == "model_call_started"] == [
        ("model_call_started", 1, 1),
        ("model_call_started", 2, 1),
    ]
    assert [c for c in calls if c[0] == "model_call_finished"] == [
        ("model_call_finished", 1, 1),
        ("model_call_finished", 2, 1),
    ]
    # the whole conversation went again (a call that starts over: it may have shown text)
    [again] = [e for e in events if e.type == "model_call_retrying"]
    assert isinstance(again, ModelCallRetrying)
    assert (again.model_call, again.attempt, again.reason) == (2, 1, "resend")
    assert open_calls(events) == [1, 0, 1, 0]
    assert (await activity_types(handle)).count("call_model") == 3
    history = await handle.fetch_history()
    await assert_replays(history, TEST_CATALOG.extended(tools=[crash_effect]))
