"""How a run's event stream ends, and who decides what a reader gets, through the real `agent
serve` (uvicorn, httpx), the real worker and the fake model server:

- every way a run ends (completed, failed, cancelled, terminated, timed out, and across
  continue-as-new) ends its SSE stream with exactly one final event naming the outcome; a run
  that cannot publish one (terminated, timed out) gets one made from its close status, marked
  `synthesized` (issue 31, item 1);
- a reader that asks for an offset far past the end decides nothing about what another reader
  gets (issue 40, attack 4);
- a `Last-Event-ID` too long to be an offset is a 400, not a 500 (issue 40)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus

from durable_agents.contracts.events import TERMINAL_EVENT_TYPES
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.hitl_support import wait_for_pending
from tests.http_api_support import LiveApi, SseEvent, collect, live_api

STREAM_SECONDS = 60


@pytest.fixture(params=["query", "updates"])
async def api(agent: AgentHarness, request: pytest.FixtureRequest) -> Any:
    """`agent serve` reading streams either way (`--stream-read`)."""
    async with live_api(agent, stream_reading=request.param) as live:
        yield live


def wid(prefix: str = "ends") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def write_call() -> fake.Completion:
    return fake.tool_calls(fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"))


async def start_waiting(agent: AgentHarness, **options: Any) -> str:
    """A run that waits for the approval of a write (started as the Temporal CLI would)."""
    agent.fake.enqueue(write_call())
    workflow_id = wid()
    handle = await agent.client.start_workflow(
        "AgentWorkflow",
        {"prompt": "write a file", "tools": ["write_file"]},
        id=workflow_id,
        task_queue=agent.task_queue,
        **options,
    )
    await wait_for_pending(handle)
    return workflow_id


def the_end(events: list[SseEvent]) -> dict[str, Any]:
    """The stream's final event, after checking that it is its only one and that ids are the
    offsets 0, 1, 2, ... with nothing missed or repeated."""
    finals = [e for e in events if e.event in TERMINAL_EVENT_TYPES]
    assert len(finals) == 1 and finals[0] is events[-1], [(e.id, e.event) for e in events]
    assert [int(e.id or -1) for e in events] == list(range(len(events)))
    data: dict[str, Any] = events[-1].data
    return data


async def live_stream(api: LiveApi, workflow_id: str) -> asyncio.Task[list[SseEvent]]:
    """An SSE client following the run from its first event, once it is reading."""
    path = f"/v1/runs/{workflow_id}/events"
    task = asyncio.create_task(collect(api.http, path))
    feeds = api.app.state.feeds
    await eventually(lambda: (feed := feeds.active(workflow_id)) and feed.readers >= 1)
    return task


async def test_a_completed_run_ends_with_run_finished(api: LiveApi, agent: AgentHarness) -> None:
    workflow_id = await start_waiting(agent)
    following = await live_stream(api, workflow_id)
    agent.fake.enqueue(fake.text("Written."))
    await agent.client.get_workflow_handle(workflow_id).signal("approve", {"call_id": "w1"})
    end = the_end(await asyncio.wait_for(following, STREAM_SECONDS))
    assert end["type"] == "run_finished" and end["answer"] == "Written."


async def test_a_failed_run_ends_with_run_failed(api: LiveApi, agent: AgentHarness) -> None:
    agent.fake.enqueue(fake.error(400, "the model refuses this request"))
    workflow_id = wid()
    started = await api.http.post("/v1/runs", json={"prompt": "p", "id": workflow_id})
    assert started.status_code in (200, 201, 202), started.text
    events = await asyncio.wait_for(
        collect(api.http, f"/v1/runs/{workflow_id}/events"), STREAM_SECONDS
    )
    end = the_end(events)
    assert end["type"] == "run_failed" and end["outcome"] == "failed"
    assert end["synthesized"] is False  # the run said so itself


async def test_a_cancelled_run_ends_with_run_failed_cancelled(
    api: LiveApi, agent: AgentHarness
) -> None:
    workflow_id = await start_waiting(agent)
    following = await live_stream(api, workflow_id)
    cancelled = await api.http.post(f"/v1/runs/{workflow_id}/cancel", json={})
    assert cancelled.status_code == 202, cancelled.text
    end = the_end(await asyncio.wait_for(following, STREAM_SECONDS))
    assert end["type"] == "run_failed" and end["outcome"] == "cancelled" and end["cancelled"]


async def test_a_terminated_run_ends_with_a_synthesized_run_failed(
    api: LiveApi, agent: AgentHarness
) -> None:
    """A terminated run runs no more workflow code: the feed makes its final event from the
    close status, says so (`synthesized`), and readers who come later get the same one."""
    workflow_id = await start_waiting(agent)
    following = await live_stream(api, workflow_id)
    await agent.client.get_workflow_handle(workflow_id).terminate(reason="operator stop")
    events = await asyncio.wait_for(following, STREAM_SECONDS)
    end = the_end(events)
    assert end["type"] == "run_failed" and end["outcome"] == "terminated"
    assert end["synthesized"] is True and "operator stop" in end["error"]
    assert end["workflow_id"] == workflow_id
    await eventually(lambda: api.app.state.feeds.active(workflow_id) is None)
    later = await collect(api.http, f"/v1/runs/{workflow_id}/events")
    assert [(e.id, e.event) for e in later] == [(e.id, e.event) for e in events]


async def test_a_run_that_timed_out_ends_with_a_synthesized_run_failed(
    api: LiveApi, agent: AgentHarness
) -> None:
    workflow_id = await start_waiting(agent, execution_timeout=timedelta(seconds=3))
    following = await live_stream(api, workflow_id)
    end = the_end(await asyncio.wait_for(following, STREAM_SECONDS))
    assert end["type"] == "run_failed" and end["outcome"] == "timed_out"
    assert end["synthesized"] is True


SUMS = 24


def always_a_sum(body: dict[str, Any]) -> Any:
    """Another calculator call until `SUMS` have run, then the answer."""
    count = sum(1 for m in body["messages"] if m["role"] == "tool")
    if count >= SUMS:
        return fake.text(f"{count} sums done.")
    return fake.tool_calls(fake.call("calculator", {"expression": f"{count} + 1"}))


async def test_a_run_that_continues_as_new_ends_once(api: LiveApi, agent: AgentHarness) -> None:
    """Continue-as-new is no end: the stream follows the next run, its offsets go on, and it
    ends once, with the last run's `run_finished`."""
    agent.fake.set_handler(always_a_sum)
    workflow_id = wid()
    handle = await agent.client.start_workflow(
        "AgentWorkflow",
        {
            "prompt": "count",
            "tools": ["calculator"],
            "max_iterations": SUMS + 5,
            "continue_as_new_after_events": 100,
        },
        id=workflow_id,
        task_queue=agent.task_queue,
    )
    events = await asyncio.wait_for(
        collect(api.http, f"/v1/runs/{workflow_id}/events"), STREAM_SECONDS
    )
    end = the_end(events)
    assert end["type"] == "run_finished" and end["answer"] == f"{SUMS} sums done."
    first_run = agent.client.get_workflow_handle(workflow_id, run_id=handle.first_execution_run_id)
    assert (await first_run.describe()).status == WorkflowExecutionStatus.CONTINUED_AS_NEW


# -- one reader's offset decides nothing for another (issue 40, attack 4) -------------------------


async def test_a_reader_far_past_the_end_starves_no_one(api: LiveApi, agent: AgentHarness) -> None:
    """The attack: a client opens the run's stream at `?after=1000000` first, while the run
    waits; a normal client then reads it from the start. The normal client gets every event,
    ending with `run_finished`; the hostile one waits for its offset and gets nothing."""
    workflow_id = await start_waiting(agent)
    path = f"/v1/runs/{workflow_id}/events"
    hostile = asyncio.create_task(collect(api.http, f"{path}?after=1000000"))
    feeds = api.app.state.feeds
    await eventually(lambda: (feed := feeds.active(workflow_id)) and feed.readers == 1)
    normal = asyncio.create_task(collect(api.http, path))
    await eventually(lambda: (feed := feeds.active(workflow_id)) and feed.readers == 2)
    agent.fake.enqueue(fake.text("Written."))
    await agent.client.get_workflow_handle(workflow_id).signal("approve", {"call_id": "w1"})
    events = await asyncio.wait_for(normal, STREAM_SECONDS)
    assert the_end(events)["type"] == "run_finished"
    assert "approval_decided" in [e.event for e in events]
    assert await asyncio.wait_for(hostile, STREAM_SECONDS) == []


async def test_a_last_event_id_too_long_is_a_400(api: LiveApi, agent: AgentHarness) -> None:
    agent.fake.enqueue(fake.text("ok"))
    workflow_id = wid()
    await api.http.post("/v1/runs", json={"prompt": "p", "id": workflow_id})
    for path in (f"/v1/runs/{workflow_id}/events", f"/v1/sessions/{workflow_id}/events"):
        response = await api.http.get(path, headers={"Last-Event-ID": "9" * 5000})
        assert response.status_code == 400, response.text
        assert "Last-Event-ID" in response.json()["error"]
