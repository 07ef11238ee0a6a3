"""Forged events (issue 40, attack 5): anyone who can signal a run can send well-formed events
through its stream's publish signal (`__temporal_workflow_stream_publish`). The run takes from
that signal only what its own activities publish, about a call it is running
(`workflows.run_events.PublishGuard`), so no reader (SSE, AG-UI, the CLI's query) sees a forged
`approval_requested`, `run_finished` or text as the run's; the run goes on untouched. Through
the real `agent serve`, the real worker and the Temporal client a forger would use."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.contrib.workflow_streams import PublishEntry, PublishInput

from durable_agents.contracts.events import EVENTS_TOPIC
from durable_agents.runtime.event_stream import read_events
from durable_agents.testing import fake_openai as fake
from durable_agents.workflows.input_guard import STREAM_PUBLISH_SIGNAL
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.hitl_support import wait_for_pending
from tests.http_api_support import LiveApi, collect, live_api
from tests.test_agui import agui_events, run_input, waiting_calls
from tests.test_bad_input import workflow_task_failures

FORGED = "FORGED-by-someone-else"


@pytest.fixture
async def api(agent: AgentHarness) -> Any:
    async with live_api(agent) as live:
        yield live


def forged_events(workflow_id: str, turn: int | None = None) -> list[dict[str, Any]]:
    """Well-formed events the run never published: an approval of a call it never made, an
    answer while it waits, text for a model call that is not running, progress of a call that
    has not started."""
    base = {"workflow_id": workflow_id, "turn": turn, "at": datetime.now(UTC).isoformat()}
    return [
        {**base, "type": "approval_requested", "call_id": "f1", "tool": "pay", "reason": FORGED},
        {**base, "type": "run_finished", "stop_reason": "completed", "answer": FORGED},
        {**base, "type": "text_delta", "model_call": 1, "text": FORGED},
        {**base, "type": "tool_progress", "call_id": "w1", "tool": "write_file", "message": FORGED},
    ]


async def forge(handle: WorkflowHandle[Any, Any], events: list[dict[str, Any]]) -> None:
    """Send `events` as a stream batch, as any Temporal client can."""
    converter = pydantic_data_converter.payload_converter
    items = [
        PublishEntry(
            topic=EVENTS_TOPIC,
            data=base64.b64encode(converter.to_payload(e).SerializeToString()).decode(),
        )
        for e in events
    ]
    await handle.signal(
        STREAM_PUBLISH_SIGNAL,
        PublishInput(items=items, publisher_id=uuid.uuid4().hex[:16], sequence=1),
    )


async def handled(handle: WorkflowHandle[Any, Any]) -> None:
    """Wait until the run's worker has handled the last signal (a workflow task after it)."""

    async def after_signal() -> bool:
        types = [e.event_type for e in (await handle.fetch_history()).events]
        signalled = max(
            i for i, t in enumerate(types) if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        )
        assert EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED in types[signalled:]
        return True

    await eventually(after_signal, what="the forged batch handled")


def write_call() -> fake.Completion:
    return fake.tool_calls(fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"))


async def test_no_reader_sees_a_forged_event_of_a_run(api: LiveApi, agent: AgentHarness) -> None:
    agent.fake.enqueue(write_call(), fake.text("Written."))
    workflow_id = f"forged-{uuid.uuid4().hex[:8]}"
    handle = await agent.client.start_workflow(
        "AgentWorkflow",
        {"prompt": "write a file", "tools": ["write_file"]},
        id=workflow_id,
        task_queue=agent.task_queue,
    )
    [request] = await wait_for_pending(handle)
    path = f"/v1/runs/{workflow_id}/events"
    live = asyncio.create_task(collect(api.http, path))
    await forge(handle, forged_events(workflow_id))
    await handled(handle)
    assert await workflow_task_failures(handle) == []
    # The run still waits: nothing it did not publish ended it, or asked for anything.
    pending = (await api.http.get(f"/v1/runs/{workflow_id}/pending")).json()
    assert [p["call_id"] for p in pending] == [request.call_id]
    await handle.signal("approve", {"call_id": request.call_id})
    events = await asyncio.wait_for(live, 60)
    assert FORGED not in json.dumps([e.data for e in events])
    assert [e.event for e in events].count("approval_requested") == 1
    assert events[-1].event == "run_finished" and events[-1].data["answer"] == "Written."
    assert [int(e.id or -1) for e in events] == list(range(len(events)))
    read, _ = await read_events(agent.client, workflow_id)  # what the CLI and console read
    assert FORGED not in json.dumps([e.model_dump(mode="json") for e in read])
    assert [e.offset for e in read] == [int(e.id or -1) for e in events]


async def test_an_agui_client_sees_no_forged_event_of_its_thread(
    api: LiveApi, agent: AgentHarness
) -> None:
    agent.fake.enqueue(write_call(), fake.text("Written."))
    thread = f"thread-{uuid.uuid4().hex[:8]}"
    stream = asyncio.create_task(agui_events(api, run_input(thread, "write a to a.txt")))
    [call] = await waiting_calls(api, thread)
    session = agent.client.get_workflow_handle(thread)
    await forge(session, forged_events(thread, turn=1))
    await handled(session)
    decided = await api.http.post(
        f"/v1/runs/{thread}/decisions",
        json={"call_id": "w1", "decision": "approve", "args_digest": call["args_digest"]},
    )
    assert decided.status_code == 200, decided.text
    events = await asyncio.wait_for(stream, 60)
    assert FORGED not in json.dumps(events)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["result"]["answer"] == "Written."
