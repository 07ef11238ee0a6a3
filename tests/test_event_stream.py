"""The live event stream (docs/events.md) on a real Temporal dev server, the real worker, the
real `openai` client and the fake model server: subscribed with `WorkflowStreamClient` (through
`runtime.event_stream`), as `agent serve` and the CLI do.

Order (a call's start before its end, an approval before the approved call's start), resuming
from an offset (nothing missed, nothing twice), continue-as-new (a session), a worker restart
(the log rebuilt by replay), a retried model call (attempt 2 voids attempt 1's text), a tool's
progress (in the stream and in `status` while it runs), and a replay of a streamed run.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.context_cache import ContextCache
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.events import (
    AGENT_EVENT,
    EVENTS_TOPIC,
    SESSION_TERMINAL_EVENT_TYPES,
    TERMINAL_EVENT_TYPES,
    AgentEvent,
)
from durable_agents.contracts.session import SessionStatus, TurnResult
from durable_agents.runtime.event_stream import follow_events, read_events
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from durable_agents.tools.definition import ToolContext, tool
from durable_agents.workflows.input_guard import STREAM_PUBLISH_SIGNAL
from testkit.eventually import eventually
from tests.catalog import TEST_CATALOG
from tests.conftest import FAKE_MODEL, SECRET_API_KEY, AgentHarness, started_workers
from tests.hitl_support import wait_for_pending
from tests.http_api_support import SseEvent, live_api, sse_events
from tests.replaying import assert_replays
from tests.session_support import echo_model, send_with_start, wait_status
from tests.test_bad_input import workflow_task_failures


class ProgressArgs(BaseModel):
    steps: int = 3


PROGRESS_GATE: dict[str, asyncio.Event] = {}
"""Per call id: set by the test to let `reports_progress` finish."""


@tool()
async def reports_progress(args: ProgressArgs, ctx: ToolContext) -> str:
    """Reports each step, then waits for the test before it finishes."""
    for step in range(1, args.steps + 1):
        ctx.progress(f"step {step} of {args.steps}", fraction=step / args.steps)
    gate = PROGRESS_GATE.setdefault(ctx.call_id, asyncio.Event())
    await gate.wait()
    return f"did {args.steps} steps"


CATALOG = TEST_CATALOG.extended(tools=[reports_progress])


async def workers(
    stack: AsyncExitStack,
    env: WorkflowEnvironment,
    server: FakeOpenAIServer,
    root: Path,
    queue: str,
) -> None:
    model = OpenAIChatModel(
        api_key=SECRET_API_KEY, base_url=server.base_url, default_model=FAKE_MODEL
    )
    stack.push_async_callback(model.close)
    await started_workers(
        stack, env.client, model, root, task_queue=queue, context_cache=ContextCache(),
        catalog=CATALOG,
    )  # fmt: skip


WRITING = 0.05
"""Seconds before each streamed chunk: replies written over time, as a real model's are (one that
comes whole in a moment sends no deltas: the workflow's `model_call_finished` carries its text)."""


@pytest.fixture
async def streamed(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> AsyncIterator[AgentHarness]:
    """The real worker (serving `reports_progress` too), the fake model server behind it."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    queue = f"events-{uuid.uuid4()}"
    async with AsyncExitStack() as stack:
        await workers(stack, temporal_env, fake_model, workspace, queue)
        yield AgentHarness(temporal_env.client, queue, workspace, ContextCache(), fake=fake_model)


async def collect(agent: AgentHarness, workflow_id: str, **kwargs: Any) -> list[AgentEvent]:
    return [
        e
        async for e in follow_events(
            agent.client, workflow_id, stop_at=kwargs.pop("stop_at", TERMINAL_EVENT_TYPES), **kwargs
        )
    ]


async def updates_subscriber(agent: AgentHarness, workflow_id: str) -> list[Any]:
    """What an application's own `WorkflowStreamClient.subscribe` reads (its polls are updates:
    they are in the run's history), up to the run's final event."""
    items = []
    stream = WorkflowStreamClient.create(agent.client, workflow_id)
    async for item in stream.subscribe([EVENTS_TOPIC]):
        items.append(item.data)
        if item.data.get("type") in TERMINAL_EVENT_TYPES:
            break
    return items


def index(events: list[AgentEvent], type_: str, call_id: str | None = None) -> int:
    return next(
        i
        for i, e in enumerate(events)
        if e.type == type_ and (call_id is None or e.call_id == call_id)
    )


def assert_contiguous(events: list[AgentEvent], start: int = 0) -> None:
    assert [e.offset for e in events] == list(range(start, start + len(events)))


ANSWER = "Both are done: the file is written and 17 * 25 is 425, as the calculator said."


async def test_a_run_streams_its_steps_in_order(streamed: AgentHarness) -> None:
    """`tool_call_started` before `tool_call_finished` for each call, the calculator's whole
    call while the write waits for a person, the approval before the approved call starts, the
    answer's text before `model_call_finished`, and `run_finished` last."""
    streamed.fake.enqueue(
        fake.tool_calls(
            fake.call("calculator", {"expression": "17 * 25"}, id="calc"),
            fake.call("write_file", {"path": "out.txt", "content": "hello"}, id="write"),
        ),
        fake.streamed(ANSWER, piece_seconds=WRITING, piece_chars=6),
    )
    handle = await streamed.start(
        {"prompt": "compute and write", "tools": ["calculator", "write_file"]}
    )
    following = asyncio.create_task(collect(streamed, handle.id))
    [request] = await wait_for_pending(handle)
    await handle.signal("approve", {"call_id": request.call_id, "by": "ana"})
    events = await following
    result = await handle.result()
    assert result.answer == ANSWER

    types = [e.type for e in events]
    assert types[0] == "run_started" and types[-1] == "run_finished"
    assert_contiguous(events)
    for call_id in ("calc", "write"):
        assert index(events, "tool_call_started", call_id) < index(
            events, "tool_call_finished", call_id
        )
    # the calculator ran and finished while the write waited for a person
    assert index(events, "tool_call_finished", "calc") < index(events, "approval_decided", "write")
    assert (
        index(events, "approval_requested", "write")
        < index(events, "approval_decided", "write")
        < index(events, "tool_call_started", "write")
    )
    decided = events[index(events, "approval_decided", "write")]
    assert decided.model_dump()["decision"] == "approved"
    assert decided.model_dump()["by"] == "ana"
    # the answer: its text streamed as deltas of call 2, before the call's end, and what was
    # left when the reply was complete in the call's end (`rest`, no signal of its own)
    text = "".join(e.model_dump()["text"] for e in events if e.type == "text_delta")
    finished = events[index_of(events, "model_call_finished", 2)].model_dump()
    assert text + (finished["rest"] or "") == ANSWER
    assert max(i for i, e in enumerate(events) if e.type == "text_delta") < max(
        i for i, e in enumerate(events) if e.type == "model_call_finished"
    )
    assert events[-1].model_dump()["answer"] == ANSWER
    # every model call is announced once, by the workflow as it schedules the call: the first
    # (tool calls only, answered at once) too, and no second start from the activity
    starts = [e.model_dump() for e in events if e.type == "model_call_started"]
    assert [(s["model_call"], s["attempt"], s["purpose"]) for s in starts] == [
        (1, 1, "turn"),
        (2, 1, "turn"),
    ]
    for call in (1, 2):
        assert index_of(events, "model_call_started", call) < index_of(
            events, "model_call_finished", call
        )
    assert index_of(events, "model_call_started", 2) < events.index(
        next(e for e in events if e.type == "text_delta")
    )


def index_of(events: list[AgentEvent], type_: str, model_call: int) -> int:
    return next(
        i
        for i, e in enumerate(events)
        if e.type == type_ and e.model_dump().get("model_call") == model_call
    )


async def test_resuming_from_an_offset_misses_nothing_and_repeats_nothing(
    streamed: AgentHarness,
) -> None:
    streamed.fake.enqueue(
        fake.tool_calls(fake.call("calculator", {"expression": "6 * 7"}, id="c1")),
        fake.tool_calls(fake.call("calculator", {"expression": "2 + 2"}, id="c2")),
        fake.streamed("Forty-two, then four.", piece_seconds=WRITING, piece_chars=3),
    )
    handle = await streamed.start({"prompt": "two sums", "tools": ["calculator"]})
    first: list[AgentEvent] = []
    async for event in follow_events(streamed.client, handle.id):
        first.append(event)
        if len(first) == 3:
            break  # the client goes away mid-run
    assert first[-1].offset is not None
    rest = await collect(streamed, handle.id, after=first[-1].offset)  # Last-Event-ID
    await handle.result()
    everything = await collect(streamed, handle.id)
    assert_contiguous(everything)
    assert [e.offset for e in first + rest] == [e.offset for e in everything]
    assert [e.model_dump(exclude={"at"}) for e in first + rest] == [
        e.model_dump(exclude={"at"}) for e in everything
    ]
    # a closed run is read by query (no history), from any offset
    read, next_offset = await read_events(streamed.client, handle.id, after=4)
    assert [e.offset for e in read] == [e.offset for e in everything[5:]]
    assert next_offset == len(everything)


async def test_a_session_stream_survives_continue_as_new(streamed: AgentHarness) -> None:
    """A follower attached from the first turn reads every turn of a session that continued
    as new several times: offsets keep counting, nothing is lost or repeated."""
    streamed.fake.set_handler(echo_model)
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(
        streamed.client, session, streamed.task_queue, "m0", {"continue_as_new_after_events": 30}
    )
    following = asyncio.create_task(
        collect(streamed, session, stop_at=SESSION_TERMINAL_EVENT_TYPES)
    )
    for n in range(1, 6):
        await handle.signal("send", {"text": f"m{n}"})
    status: SessionStatus = await wait_status(
        handle, lambda s: s.turns == 6 and s.state == "idle", 60
    )
    assert status.runs > 1  # it continued as new
    await handle.signal("end")
    events = await following
    assert_contiguous(events)
    started = [e.model_dump() for e in events if e.type == "turn_started"]
    assert [(e["turn"], e["message"]) for e in started] == [(n + 1, f"m{n}") for n in range(6)]
    finished = [e for e in events if e.type == "run_finished"]
    assert [e.turn for e in finished] == list(range(1, 7))
    assert events[-1].type == "session_ended"
    # each inline turn's own events carry its turn, between its turn_started and turn_finished
    for turn in range(1, 7):
        own = [i for i, e in enumerate(events) if e.turn == turn]
        assert events[own[0]].type == "turn_started" and events[own[-1]].type == "turn_finished"


async def test_the_stream_survives_a_worker_restart(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The worker stops while the run waits for a person; a new worker (a fresh process state:
    the stream rebuilt by replaying history) serves the same follower, with the same offsets,
    and the events published before the restart are not published again."""
    queue = f"events-restart-{uuid.uuid4()}"
    fake_model.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1")),
        fake.text("written"),
    )
    client = temporal_env.client
    async with AsyncExitStack() as stack:
        await workers(stack, temporal_env, fake_model, tmp_path, queue)
        handle = await client.start_workflow(
            "AgentWorkflow",
            {"prompt": "write a", "tools": ["write_file"]},
            id=f"restart-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
        await wait_for_pending(handle)
        before, _ = await read_events(client, handle.id)
    following = asyncio.create_task(
        collect(AgentHarness(client, queue, tmp_path, ContextCache(), fake=fake_model), handle.id)
    )
    async with AsyncExitStack() as stack:
        await workers(stack, temporal_env, fake_model, tmp_path, queue)
        await handle.signal("approve", {"call_id": "w1"})
        events = await following
        assert (await handle.result()).answer == "written"
    assert_contiguous(events)
    assert [e.model_dump(exclude={"at"}) for e in events[: len(before)]] == [
        e.model_dump(exclude={"at"}) for e in before
    ]
    assert [e.type for e in before][-1] == "approval_requested"
    assert [e.type for e in events].count("approval_requested") == 1
    assert events[-1].type == "run_finished"


async def test_a_retried_model_call_marks_its_attempt(streamed: AgentHarness) -> None:
    """The stream of the first attempt breaks after some text; the retry publishes
    `model_call_retrying` with attempt 2 (the call's one `model_call_started` stays the
    workflow's), and its deltas are the whole answer."""
    answer = "A complete answer, streamed again from its start by the second attempt."
    streamed.fake.enqueue(
        fake.streamed(answer, piece_seconds=WRITING, piece_chars=5, drop_after=6),
        fake.streamed(answer, piece_seconds=WRITING, piece_chars=5),
    )
    handle = await streamed.start({"prompt": "stream", "model_max_attempts": 3})
    events = await collect(streamed, handle.id)
    assert (await handle.result()).answer == answer
    starts = [e.model_dump() for e in events if e.type == "model_call_started"]
    assert [s["attempt"] for s in starts] == [1]
    retries = [e.model_dump() for e in events if e.type == "model_call_retrying"]
    assert [(r["attempt"], r["reason"]) for r in retries] == [(2, "retry")]
    first_text = "".join(
        e.model_dump()["text"]
        for e in events
        if e.type == "text_delta" and e.model_dump()["attempt"] == 1
    )
    assert first_text and answer.startswith(first_text) and first_text != answer
    second = [e for e in events if e.type == "text_delta" and e.model_dump()["attempt"] == 2]
    assert "".join(e.model_dump()["text"] for e in second) == answer
    assert index(events, "model_call_retrying") < events.index(second[0])
    assert [e.type for e in events].count("model_call_finished") == 1


async def test_tool_progress_shows_in_the_stream_and_in_status(streamed: AgentHarness) -> None:
    streamed.fake.enqueue(
        fake.tool_calls(fake.call("reports_progress", {"steps": 3}, id="p1")),
        fake.text("all steps done"),
    )
    handle = await streamed.start({"prompt": "work", "tools": ["reports_progress"]})
    following = asyncio.create_task(collect(streamed, handle.id))

    async def running() -> AgentStatus:
        status = await handle.query("status", result_type=AgentStatus)
        assert status.running and status.running[0].progress == "step 3 of 3", status.running
        return status

    status = await eventually(running, what="the running call with its progress in status")
    [call] = status.running
    assert (call.call_id, call.tool, call.fraction) == ("p1", "reports_progress", 1.0)
    PROGRESS_GATE.setdefault("p1", asyncio.Event()).set()
    events = await following
    await handle.result()
    assert (await handle.query("status", result_type=AgentStatus)).running == []
    progress = [e.model_dump() for e in events if e.type == "tool_progress"]
    assert progress and progress[-1]["message"] == "step 3 of 3"
    # three reports in a row went out as one: the latest wins within a batch
    assert [p["fraction"] for p in progress] == [1.0]
    assert (
        index(events, "tool_call_started", "p1")
        < index(events, "tool_progress", "p1")
        < index(events, "tool_call_finished", "p1")
    )


async def test_a_streamed_run_replays_without_nondeterminism(streamed: AgentHarness) -> None:
    """A run with deltas (signals), an approval and a follower's polls (updates) in its
    history replays; and with the stream turned off (`stream_deltas: false`) the history has
    no stream signal at all."""
    streamed.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "r.txt", "content": "r"}, id="w1")),
        fake.streamed("Replayed answer, streamed in pieces.", piece_seconds=WRITING, piece_chars=4),
    )
    handle = await streamed.start({"prompt": "write r", "tools": ["write_file"]})
    following = asyncio.create_task(collect(streamed, handle.id))
    subscribed = asyncio.create_task(updates_subscriber(streamed, handle.id))
    await wait_for_pending(handle)
    await handle.signal("approve", {"call_id": "w1"})
    await following
    await subscribed
    await handle.result()
    history = await handle.fetch_history()
    names = {e.workflow_execution_signaled_event_attributes.signal_name for e in history.events} | {
        e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        for e in history.events
    }
    assert "__temporal_workflow_stream_publish" in names
    assert "__temporal_workflow_stream_poll" in names
    await assert_replays(history, CATALOG)

    streamed.fake.enqueue(fake.streamed("No deltas for this one.", piece_chars=4))
    _, quiet = await streamed.run({"prompt": "quiet", "stream_deltas": False})
    quiet_history = await quiet.fetch_history()
    signals = [
        e.workflow_execution_signaled_event_attributes.signal_name for e in quiet_history.events
    ]
    assert "__temporal_workflow_stream_publish" not in signals
    events, _ = await read_events(streamed.client, quiet.id)
    assert [e.type for e in events] == [
        "run_started",
        "model_call_started",  # from the workflow: no signal
        "model_call_finished",
        "run_finished",
    ]


async def until_type(
    http: httpx.AsyncClient, path: str, type_: str, headers: dict[str, str] | None = None
) -> list[SseEvent]:
    """A session's SSE events up to the first of `type_` (the stream itself goes on)."""
    got: list[SseEvent] = []
    async for event in sse_events(http, path, headers=headers):
        got.append(event)
        if event.event == type_:
            break
    return got


async def test_a_session_sse_carries_its_child_turn_in_place(streamed: AgentHarness) -> None:
    """`turns: child`: `agent serve`'s session stream carries the child turn's events after the
    `turn_started` that names it (ids `<session offset>/<child offset>`): its approval too, so a
    session client sees and answers it. Two clients share one subscription per run; a client
    resuming inside the child turn (or at the pointer) misses nothing and gets nothing twice."""
    streamed.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "c.txt", "content": "c"}, id="cw1")),
        fake.text("wrote c.txt"),
    )
    session_id = f"sse-child-{uuid.uuid4().hex[:8]}"
    child_id = f"{session_id}/turn-1"
    session = await streamed.client.start_workflow(
        "SessionWorkflow",
        {"turns": "child", "agent": {"tools": ["write_file"]}},
        id=session_id,
        task_queue=streamed.task_queue,
    )
    path = f"/v1/sessions/{session_id}/events"
    async with live_api(streamed) as api:
        clients = [
            asyncio.create_task(until_type(api.http, path, "turn_finished")) for _ in range(2)
        ]
        await session.signal("send", {"text": "write c"})
        feeds = api.app.state.feeds

        def both_read_the_child() -> bool:
            feed = feeds.active(child_id)
            assert feed is not None and feed.readers == 2 and feed.events
            assert any(e.type == "approval_requested" for e in feed.events)
            return True

        await eventually(both_read_the_child, what="both clients reading the child's one feed")
        assert set(feeds._feeds) == {session_id, child_id}  # one subscription per run
        assert feeds.active(session_id).readers == 2
        asked = next(e for e in feeds.active(child_id).events if e.type == "approval_requested")
        decided = await api.http.post(
            f"/v1/runs/{child_id}/decisions",
            json={
                "call_id": "cw1",
                "decision": "approve",
                "by": "ana",
                "args_digest": asked.digest,
            },
        )
        assert decided.status_code == 200, decided.text
        first, second = await asyncio.gather(*clients)
        assert [(e.id, e.event) for e in first] == [(e.id, e.event) for e in second]

        types = [e.event for e in first]
        pointer = first[types.index("turn_started")]
        assert pointer.data["child_workflow_id"] == child_id
        inside = first[types.index("turn_started") + 1 : -1]
        assert inside and all(e.data["workflow_id"] == child_id for e in inside)
        assert [e.id for e in inside] == [f"{pointer.id}/{e.data['offset']}" for e in inside]
        order = [e.event for e in inside]
        assert order.index("approval_requested") < order.index("approval_decided")
        assert order.index("approval_decided") < order.index("tool_call_started")
        assert order.index("tool_call_started") < order.index("tool_call_finished")
        assert order[-1] == "run_finished"
        assert first[-1].event == "turn_finished" and "/" not in (first[-1].id or "")

        # resuming inside the child turn, and at the pointer itself
        at = next(i for i, e in enumerate(first) if e.event == "approval_requested")
        for resume_at in (at, types.index("turn_started")):
            last_id = first[resume_at].id or ""
            rest = await until_type(api.http, path, "turn_finished", {"Last-Event-ID": last_id})
            assert [(e.id, e.event) for e in rest] == [
                (e.id, e.event) for e in first[resume_at + 1 :]
            ]
        bad = await api.http.get(path, headers={"Last-Event-ID": "x/1"})
        assert bad.status_code == 422 and "Last-Event-ID" in bad.text
    await session.signal("end")
    await session.result()


def always_a_sum(body: dict[str, Any]) -> Any:
    """Another calculator call, whatever it was told (the turn runs to its limit)."""
    count = sum(1 for m in body["messages"] if m["role"] == "tool")
    return fake.tool_calls(fake.call("calculator", {"expression": f"{count} + 1"}))


async def test_a_turn_that_outgrows_the_session_is_announced_and_followed(
    streamed: AgentHarness,
) -> None:
    """An inline turn past the agent's history threshold moves to the child run
    `<session>/turn-1`: the session's stream says so (`turn_moved`), and the session's SSE
    goes on with the child's events in place until the turn ends."""
    streamed.fake.set_handler(always_a_sum)
    session_id = f"moved-{uuid.uuid4().hex[:8]}"
    agent = {"tools": ["calculator"], "max_iterations": 25, "continue_as_new_after_events": 100}
    await streamed.client.start_workflow(
        "SessionWorkflow", {"agent": agent}, id=session_id, task_queue=streamed.task_queue
    )
    path = f"/v1/sessions/{session_id}/events"
    async with live_api(streamed) as api:
        following = asyncio.create_task(until_type(api.http, path, "turn_finished"))
        latest = streamed.client.get_workflow_handle(session_id)
        result = await latest.execute_update("send", {"text": "count"}, result_type=TurnResult)
        assert result.workflow_id == f"{session_id}/turn-1"
        events = await following
    types = [e.event for e in events]
    moved = events[types.index("turn_moved")]
    assert moved.data["child_workflow_id"] == f"{session_id}/turn-1"
    assert moved.data["turn"] == 1
    before = events[: types.index("turn_moved")]
    after = events[types.index("turn_moved") + 1 : -1]
    assert any(e.event == "tool_call_finished" for e in before)  # inline, on the session
    assert after and all(e.data["workflow_id"] == result.workflow_id for e in after)
    assert all((e.id or "").startswith(f"{moved.id}/") for e in after)
    assert after[-1].event == "run_finished" and events[-1].event == "turn_finished"
    assert any(e.event == "tool_call_finished" for e in after)  # rounds ran in the child
    assert all(AGENT_EVENT.validate_python(e.data).turn in (1, None) for e in events)
    await latest.signal("end")
    await latest.result()


async def test_a_bad_publish_signal_is_dropped_and_the_run_goes_on(streamed: AgentHarness) -> None:
    """Anyone who can signal a run can send its stream's publish signal: a batch the stream's
    handler would raise on (data not base64, not a payload, no input at all) or that readers
    could not decode is dropped whole by the worker's guard; the run is not wedged (no workflow
    task fails) and its stream still reads."""
    streamed.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "o.txt", "content": "x"}, id="w")),
        fake.text(ANSWER),
    )
    handle = await streamed.start({"prompt": "write", "tools": ["write_file"]})
    [request] = await wait_for_pending(handle)
    undecodable = base64.b64encode(Payload(metadata={"encoding": b"x/y"}).SerializeToString())
    junk = base64.b64encode(
        pydantic_data_converter.payload_converter.to_payload({"hello": 1}).SerializeToString()
    )
    for batch in (
        {"items": [{"topic": "events", "data": "!!!not base64"}]},
        {"items": [{"topic": "events", "data": base64.b64encode(b"hello world").decode()}]},
        {"items": [{"topic": "events", "data": undecodable.decode()}]},
        {"items": [{"topic": "events", "data": junk.decode()}], "publisher_id": "p", "sequence": 1},
    ):
        await handle.signal(STREAM_PUBLISH_SIGNAL, batch)
    await handle.signal(STREAM_PUBLISH_SIGNAL)  # no input

    async def signals_handled() -> bool:
        history = await handle.fetch_history()
        types = [e.event_type for e in history.events]
        last_signal = max(
            i for i, t in enumerate(types) if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        )
        assert any(
            t
            in (
                EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
                EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
            )
            for t in types[last_signal:]
        ), [EventType.Name(t) for t in types[last_signal - 3 :]]
        return True

    await eventually(signals_handled, what="the publish signals handled")
    assert await workflow_task_failures(handle) == []
    await handle.signal("approve", {"call_id": request.call_id})
    assert (await handle.result()).answer == ANSWER
    events, _ = await read_events(streamed.client, handle.id)
    followed = await collect(streamed, handle.id)
    for read in (events, followed):  # the well-formed junk item is skipped, nothing else
        assert read[0].type == "run_started" and read[-1].type == "run_finished"
        assert "approval_decided" in [e.type for e in read]
    assert [e.offset for e in events] == [e.offset for e in followed]
