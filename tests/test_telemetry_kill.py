"""SIGKILL mid-run, and still exactly one span per model call and tool call (issue 37 part 3).

Real `python worker.py` processes with `OTEL_ENABLED=1` and `OTEL_EXPORTER_OTLP_ENDPOINT`
pointing at a real OTLP/HTTP receiver in the test (`testkit/otlp_receiver.py`). The first worker is
killed with SIGKILL during the second model call; a second worker replays the run and finishes it
(through an approval). At the receiver: each activity of the history has exactly one span, for
the attempt that completed (the killed attempt 1 never ended, so it has none; its retry is
marked `temporal.activity.attempt` 2), and the run, each turn and the approval have one span,
including the turn the killed worker ended, which replay never ends again.

Slow (a 3 s model timeout, two worker start-ups): marker `slow`, `make test-slow`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from testkit.crash_tools import WorkerCluster
from testkit.eventually import eventually
from testkit.otlp_receiver import OtlpReceiver
from tests.hitl_support import wait_for_pending

pytestmark = pytest.mark.slow


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    found = OtlpReceiver()
    yield found
    found.close()


async def completed_attempts(handle: WorkflowHandle[Any, Any]) -> dict[str, tuple[str, int]]:
    """Activity id -> (type, the attempt that completed), from history: the last attempt
    started, or a local activity's marker."""
    history = await handle.fetch_history()
    scheduled: dict[int, tuple[str, str]] = {}
    found: dict[str, tuple[str, int]] = {}
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = (attrs.activity_id, attrs.activity_type.name)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started = event.activity_task_started_event_attributes
            activity_id, kind = scheduled[started.scheduled_event_id]
            found[activity_id] = (kind, started.attempt)
        elif (marker := event.marker_recorded_event_attributes).marker_name == (
            "core_local_activity"
        ):
            data = json.loads(marker.details["data"].payloads[0].data)
            found[data["activity_id"]] = (data["activity_type"], data["attempt"])
    return found


async def test_sigkill_mid_run_gives_one_span_per_call(
    temporal_env: WorkflowEnvironment,
    fake_model: FakeOpenAIServer,
    receiver: OtlpReceiver,
    tmp_path: Path,
) -> None:
    cluster = WorkerCluster(
        temporal_env.client,
        fake_model.base_url,
        tmp_path,
        extra_env={"OTEL_ENABLED": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint},
    )
    write = {"path": "out.txt", "content": "x", "overwrite": True}
    fake_model.enqueue(
        fake.tool_calls(fake.call("calculator", {"expression": "2 + 3"}, id="c1")),
        fake.delay(120, fake.text("the killed worker never gets this")),
        fake.tool_calls(fake.call("write_file", write, id="w1")),
        fake.text("done after the crash"),
    )
    try:
        first = await cluster.start_worker()
        handle = await cluster.start_run(
            {
                "prompt": "add, then write",
                "tools": ["calculator", "write_file"],
                "model_timeout_seconds": 3,
                "model_max_attempts": 3,
            }
        )
        await eventually(lambda: fake_model.request_count == 2, what="the second model call")
        await cluster.kill(first)
        await cluster.start_worker()
        await wait_for_pending(handle, timeout=60)
        await handle.signal("approve", {"call_id": "w1", "by": "alice"})
        result = await cluster.result_of(handle)
    finally:
        await cluster.close()
    assert result.answer == "done after the crash"

    def run_span_arrived() -> str:
        found = receiver.spans_where(
            gen_ai__operation__name="invoke_agent", temporal__workflow__id=handle.id
        )
        assert len(found) == 1, found
        return found[0].trace_id

    trace_id = await eventually(run_span_arrived, timeout=10, what="the run's span")
    spans = [span for span in receiver.spans if span.trace_id == trace_id]
    assert {span.service for span in spans} == {"durable-agents"}
    assert [i for i, n in Counter(s.span_id for s in spans).items() if n > 1] == []

    history = await completed_attempts(handle)
    calls = {kind: n for kind, n in Counter(kind for kind, _ in history.values()).items()}
    assert calls["calculator"] == calls["write_file"] == 1
    by_activity = [s for s in spans if s.get("temporal.activity.id") is not None]
    # Exactly one span per model and tool call, for the attempt that completed...
    assert sorted(
        (s.get("temporal.activity.id"), s.get("temporal.activity.attempt")) for s in by_activity
    ) == sorted(
        (activity_id, attempt)
        for activity_id, (kind, attempt) in history.items()
        if kind in ("call_model", "calculator", "write_file")
    )
    # ... and the killed model call's retry is marked as one.
    chats = [s for s in by_activity if s.get("gen_ai.operation.name") == "chat"]
    assert sorted(s.get("temporal.activity.attempt") for s in chats)[-1] == 2
    named = Counter(s.name for s in spans if s.get("temporal.activity.id") is None)
    assert named == {
        "invoke_agent AgentWorkflow": 1,
        "turn 1": 1,
        "turn 2": 1,
        "turn 3": 1,
        "approval write_file": 1,
    }
