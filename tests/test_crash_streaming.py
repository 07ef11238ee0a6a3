"""Kill -9 a worker while a model reply is streaming: a fresh worker retries the model call from
scratch and the run completes with one clean reply; nothing half-streamed reaches the
conversation, the result or the activity results in history.

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

from cli.live_text import model_calls_in_flight
from contracts.model_io import ModelReply
from testkit import fake_openai as fake
from testkit.crash_tools import WorkerCluster, attempts_of
from testkit.eventually import eventually
from testkit.fake_openai import FakeOpenAIServer

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
    handle = await cluster.start_run(
        {
            "prompt": "What is 2 + 3?",
            "tools": ["calculator"],
            "model_timeout_seconds": 3,
            "model_max_attempts": 3,
        }
    )
    # The worker has received part of the reply: its heartbeat shows the text so far.
    partial = PARTIAL[: 4 * (HELD_AFTER - 1)]

    async def mid_stream() -> bool:
        calls = await model_calls_in_flight(handle)
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
