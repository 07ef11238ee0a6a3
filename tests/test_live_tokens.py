"""Live tokens through the real worker: the model activity streams from the fake server (SSE
over real HTTP, the real `openai` client), heartbeats what it received as a `ModelProgress`
that `describe()` shows, still records one assembled reply per model call, and can be
cancelled while the stream is silent. `agent run` prints the answer as it is written.

A stream that must be seen half-way is held by the fake server after some chunks until the test
sets an event, so nothing races a delay.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError
from temporalio.testing import WorkflowEnvironment

from durable_agents.cli.live_text import LiveCall, LiveText, StreamText, model_calls_in_flight
from durable_agents.client import RunHandle, render
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.events import ModelCallFinished, ModelCallStarted, TextDelta
from durable_agents.contracts.model_io import PROGRESS_TAIL_CHARS, ModelProgress, ModelReply
from durable_agents.contracts.usage import TokenUsage
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.test_cli_run import AgentCli

ANSWER = (
    "Streaming works: this answer arrives in small pieces, and the worker heartbeats the text "
    "it has so far while the model is still writing the rest of it."
)
FIRST_PART_CHUNKS = 8  # the role chunk, then 7 pieces of 4 characters
FIRST_PART = ANSWER[: 4 * (FIRST_PART_CHUNKS - 1)]


async def progress_of(run: RunHandle) -> ModelProgress:
    """The heartbeat details of the run's model call in flight, once it has streamed text."""
    calls = await model_calls_in_flight(run)
    assert calls, "no model call with progress in flight yet"
    assert calls[-1].progress.chars > 0, calls
    return calls[-1].progress


async def completed_model_results(
    client: Client, handle: WorkflowHandle[Any, Any]
) -> list[ModelReply]:
    """The result of every completed `call_model` activity in the run's history."""
    history = await handle.fetch_history()
    converter = client.data_converter
    results = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = event.activity_task_completed_event_attributes
            scheduled = next(
                e for e in history.events if e.event_id == attrs.scheduled_event_id
            ).activity_task_scheduled_event_attributes
            if scheduled.activity_type.name == "call_model":
                [reply] = await converter.decode(attrs.result.payloads, [ModelReply])
                results.append(reply)
    return results


async def test_heartbeats_carry_the_text_so_far_and_history_one_reply(
    agent: AgentHarness,
) -> None:
    release = threading.Event()
    agent.fake.enqueue(
        fake.streamed(ANSWER, piece_chars=4, hold_after=FIRST_PART_CHUNKS, release=release)
    )
    handle = await agent.start({"prompt": "Stream something"})

    progress = await eventually(
        lambda: progress_of(RunHandle(agent.client, handle.id)), what="the streamed text so far"
    )
    assert progress.streaming and progress.attempt == 1
    assert progress.chars == len(FIRST_PART)
    assert progress.tail == FIRST_PART[-PROGRESS_TAIL_CHARS:]
    assert progress.model == "fake-model-1"
    # No chunk arrives while the stream is held, and the activity still heartbeats.
    first_beat = await last_heartbeat(handle)
    await eventually(
        lambda: later_heartbeat(handle, first_beat), what="a heartbeat while no chunk arrives"
    )

    release.set()
    result = await handle.result()

    assert result.answer == ANSWER
    assert [r.content for r in await completed_model_results(agent.client, handle)] == [ANSWER]
    assert agent.fake.last_request.body["stream"] is True


async def last_heartbeat(handle: WorkflowHandle[Any, Any]) -> float:
    description = await handle.describe()
    [pending] = description.raw_description.pending_activities
    assert pending.HasField("last_heartbeat_time")
    return pending.last_heartbeat_time.ToNanoseconds()


async def later_heartbeat(handle: WorkflowHandle[Any, Any], than: float) -> bool:
    return await last_heartbeat(handle) > than


async def test_the_tool_call_being_written_shows_in_the_progress(agent: AgentHarness) -> None:
    release = threading.Event()
    call = fake.call("echo", {"text": "a fairly long argument to stream"}, id="e1")
    agent.fake.enqueue(
        fake.streamed(
            fake.tool_calls(call, content="Let me echo that."),
            piece_chars=4,
            split_call_header=True,
            hold_after=8,  # the role, 5 pieces of text, the call's id, its name
            release=release,
        ),
        fake.streamed("Echoed."),
    )
    handle = await agent.start({"prompt": "Echo", "tools": ["echo"]})

    progress = await eventually(
        lambda: progress_of(RunHandle(agent.client, handle.id)), what="the progress"
    )
    await eventually(
        lambda: tool_of(RunHandle(agent.client, handle.id)), what="the tool name in the progress"
    )
    release.set()
    result = await handle.result()

    assert progress.tail == "Let me echo that."
    assert result.answer == "Echoed."
    assert [s.observation for s in result.steps] == ["a fairly long argument to stream"]


async def tool_of(run: RunHandle) -> bool:
    progress = await progress_of(run)
    assert progress.tool == "echo", progress
    return True


async def test_cancelling_a_silent_stream_ends_the_run(agent: AgentHarness) -> None:
    release = threading.Event()  # never set: the stream stays silent
    agent.fake.enqueue(fake.streamed(ANSWER, piece_chars=4, hold_after=3, release=release))
    handle = await agent.start({"prompt": "Stream and hang"})
    await eventually(lambda: agent.fake.chunks_sent >= 3, what="the first chunks")

    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()

    assert isinstance(caught.value.cause, CancelledError)
    events = [e.event_type for e in (await handle.fetch_history()).events]
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED in events
    release.set()


async def test_reasoning_key_survives_the_run_and_goes_back(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.streamed(
            fake.Completion(
                tool_calls=(fake.call("echo", {"text": "hi"}, id="e1"),),
                reasoning_content="I will echo.",
                reasoning_key="reasoning",
                finish_reason="tool_calls",
            )
        ),
        fake.streamed("Done."),
    )

    result, _ = await agent.run({"prompt": "Echo hi", "tools": ["echo"]})

    assert result.answer == "Done."
    assistant = [m for m in agent.fake.requests[1].messages if m["role"] == "assistant"]
    assert assistant[0]["reasoning"] == "I will echo."
    assert "reasoning_content" not in assistant[0]


async def test_estimated_usage_is_flagged_in_the_result_and_budgets_apply(
    agent: AgentHarness,
) -> None:
    agent.fake.set_handler(
        lambda body: fake.streamed(
            fake.Completion(
                tool_calls=(fake.call("echo", {"text": "x" * 400}),),
                usage=None,
                finish_reason="tool_calls",
            )
        )
    )

    result, _ = await agent.run(
        {"prompt": "Loop", "tools": ["echo"], "max_total_tokens": 300, "max_iterations": 10}
    )

    assert result.stop_reason == "token_budget"
    assert result.usage.estimated
    assert result.usage.total_tokens > 300
    assert all(call.usage.estimated for call in result.model_calls)
    assert 1 < result.iterations < 10


async def test_a_worker_without_streaming_still_reports_progress(agent: AgentHarness) -> None:
    release = threading.Event()
    agent.fake.refuse_streaming = fake.STREAM_NOT_SUPPORTED
    agent.fake.enqueue(fake.hold(release, fake.text("plain")))
    handle = await agent.start({"prompt": "Plain"})

    async def waiting() -> ModelProgress:
        calls = await model_calls_in_flight(RunHandle(agent.client, handle.id))
        assert calls, "no progress yet"
        return calls[0].progress

    progress = await eventually(waiting, what="the plain call's heartbeat details")
    release.set()
    result = await handle.result()

    assert (progress.streaming, progress.chars, progress.model) == (False, 0, "fake-model-1")
    assert result.answer == "plain"
    assert [r.body.get("stream") is True for r in agent.fake.requests] == [True, False]


# -- the CLI -------------------------------------------------------------------------------------


def test_estimated_tokens_are_marked_in_the_cli() -> None:
    exact = TokenUsage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
    estimated = TokenUsage(prompt_tokens=16, completion_tokens=3, total_tokens=19, estimated=True)

    assert render.tokens(exact) == "15 tokens"
    assert render.tokens(estimated) == "~19 tokens"
    summary = render.result_summary(
        AgentResult(
            answer="a", stop_reason="completed", iterations=1, steps=[], model="m", usage=estimated
        )
    )
    assert "~19 tokens (16 prompt + 3 completion, estimated)" in summary


def test_live_text_prints_what_is_new_and_marks_gaps() -> None:
    live = LiveText()

    def snap(text: str, *, attempt: int = 1, tool: str | None = None, aid: str = "1") -> list[Any]:
        progress = ModelProgress(
            model="m", attempt=attempt, streaming=True, chars=len(text),
            tail=text[-PROGRESS_TAIL_CHARS:], tool=tool,
        )  # fmt: skip
        return [(o.kind, o.value) for o in live.update(LiveCall(aid, attempt, progress))]

    assert snap("Hello") == [("text", "Hello")]
    assert snap("Hello") == []
    assert snap("Hello, world") == [("text", ", world")]
    long = "Hello, world" + "x" * 500 + "END"
    assert snap(long) == [("text", "…" + long[-PROGRESS_TAIL_CHARS:])]
    assert snap("Again", attempt=2)[0][0] == "line"  # the call was retried: it starts over
    assert live.shown == len("Again")
    assert snap("Again", attempt=2, tool="echo") == [("line", "  … writing a call to echo")]
    assert snap("New turn", aid="7") == [("text", "New turn")]


async def test_agent_run_shows_the_answer_as_it_is_written(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    workflow_id = f"cli-live-{uuid.uuid4()}"
    release = threading.Event()
    agent.fake.enqueue(
        fake.streamed(ANSWER, piece_chars=4, hold_after=FIRST_PART_CHUNKS, release=release)
    )
    process = await cli.spawn("run", "Stream to me", "--id", workflow_id)
    assert process.stdout is not None

    # The first part is on screen while the rest of the answer has not even been sent.
    seen = await read_until_text(process.stdout, FIRST_PART)
    assert agent.fake.chunks_sent == FIRST_PART_CHUNKS
    release.set()
    out, err = await asyncio.wait_for(process.communicate(), 30)

    assert process.returncode == 0, err
    printed = seen + out.decode()
    assert "  ✎ " + FIRST_PART in printed
    assert printed.index(FIRST_PART) < printed.index("done · completed")
    assert printed.rstrip().endswith(ANSWER)


async def read_until_text(stream: asyncio.StreamReader, text: str, timeout: float = 30) -> str:
    """What `stream` printed until `text` appeared (the live text has no line end yet)."""
    seen = b""
    async with asyncio.timeout(timeout):
        while text.encode() not in seen:
            piece = await stream.read(256)
            assert piece, f"output ended before {text!r}: {seen.decode()}"
            seen += piece
    return seen.decode()


def test_stream_text_prints_each_piece_and_voids_a_retried_attempt() -> None:
    live = StreamText()
    at = datetime(2026, 1, 1, tzinfo=UTC)

    def show(event: Any) -> list[tuple[str, str]]:
        return [(o.kind, o.value) for o in live.update(event)]

    base = {"workflow_id": "w", "at": at, "model_call": 1}
    assert show(ModelCallStarted(**base)) == []
    assert show(TextDelta(**base, text="Hel")) == [("text", "Hel")]
    assert show(TextDelta(**base, text="lo")) == [("text", "lo")]
    [(kind, line)] = show(ModelCallStarted(**base, attempt=2))
    assert kind == "line" and "attempt 2" in line
    assert show(TextDelta(**base, attempt=1, text="late")) == []  # the void attempt's piece
    assert show(TextDelta(**base, attempt=2, text="Hello")) == [("text", "Hello")]
    assert show(ModelCallFinished(**base)) == [("end", "")]
    assert show(TextDelta(**{**base, "model_call": 2}, text="next")) == [("text", "next")]
    [(kind, line)] = show(ModelCallStarted(**{**base, "model_call": 2}))  # the fallback model
    assert kind == "line" and "next model" in line


async def test_agent_run_prints_every_piece_from_the_stream(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    """A long answer is printed whole as it streams: the stream carries every piece, where
    heartbeats (about one a second, the last few hundred characters) would leave gaps (`…`)."""
    cli = AgentCli.of(agent, temporal_env)
    answer = "".join(f"piece {n:04d}; " for n in range(150))  # 1,650 characters
    held_chars = 1_200
    release = threading.Event()
    agent.fake.enqueue(
        fake.streamed(answer, piece_chars=10, hold_after=held_chars // 10 + 1, release=release)
    )
    process = await cli.spawn("run", "Stream a long answer", "--id", f"cli-long-{uuid.uuid4()}")
    assert process.stdout is not None
    seen = await read_until_text(process.stdout, answer[held_chars - 20 : held_chars])
    release.set()
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err
    assert held_chars > PROGRESS_TAIL_CHARS
    live = seen.split("  ✎ ", 1)[1]
    assert live.startswith(answer[:held_chars]), live[:300]
    assert (seen + out.decode()).rstrip().endswith(answer.rstrip())
