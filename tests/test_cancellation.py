"""`temporal workflow cancel` reaches in-flight activities (they heartbeat, which is how an
activity learns of a cancellation), and the run ends as cancelled with its steps so far in the
current details. The model is the scripted in-memory one: it notes when its call is cancelled."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError

from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.agent_test_tools import executions
from tests.conftest import ScriptedHarness


async def cancel_and_wait(handle: WorkflowHandle[Any, Any]) -> None:
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    assert isinstance(caught.value.cause, CancelledError)


async def activity_events(handle: WorkflowHandle[Any, Any]) -> list[int]:
    cancel_kinds = {
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
    }
    return [
        e.event_type for e in (await handle.fetch_history()).events if e.event_type in cancel_kinds
    ]


async def test_cancel_during_a_model_call(scripted_agent: ScriptedHarness) -> None:
    model = scripted_agent.model
    model.enqueue(sm.hang())  # answers only if nobody cancels it
    handle = await scripted_agent.start({"prompt": "x"})
    await eventually(lambda: model.request_count == 1, what="the model call to be in flight")

    await cancel_and_wait(handle)
    # The model call itself was cancelled (the cancellation reached the running activity), and
    # the history shows the request before the cancellation it led to.
    assert [r.turn for r in model.cancelled] == [1]
    assert model.served == 0
    assert await activity_events(handle) == [
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
    ]
    description = await handle.describe()
    assert description.status is not None and description.status.name == "CANCELED"


async def test_cancel_during_a_tool_call(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("echo", {"text": "first"})),
        sm.tool_calls(sm.call("slow_tool", {"seconds": 60}, id="slow")),
    )
    handle = await scripted_agent.start({"prompt": "x", "tools": ["echo", "slow_tool"]})
    started = f"started:{handle.id}/2/slow"
    await eventually(lambda: executions[started] == 1, what="the slow tool to start")

    await cancel_and_wait(handle)
    assert executions[f"cancelled:{handle.id}/2/slow"] == 1  # the tool itself saw the cancel
    assert await activity_events(handle) == [
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
    ]
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert details == "cancelled at turn 2 after 1 tool call · 30 tokens"
