"""`temporal workflow cancel` reaches in-flight activities promptly (they heartbeat every
second), and the run ends as cancelled with its steps so far in the current details."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError

from tests import fake_openai as fake
from tests.agent_test_tools import executions
from tests.conftest import AgentHarness


async def wait_until(condition: Callable[[], bool]) -> None:
    for _ in range(300):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


async def cancel_and_wait(handle: WorkflowHandle[Any, Any]) -> float:
    started = time.monotonic()
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    assert isinstance(caught.value.cause, CancelledError)
    return time.monotonic() - started


async def activity_events(handle: WorkflowHandle[Any, Any]) -> list[int]:
    cancel_kinds = {
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
    }
    return [
        e.event_type for e in (await handle.fetch_history()).events if e.event_type in cancel_kinds
    ]


async def test_cancel_during_a_model_call(agent: AgentHarness) -> None:
    agent.fake.enqueue(fake.delay(60, fake.text("too late")))
    handle = await agent.start({"prompt": "x"})
    await wait_until(lambda: agent.fake.request_count == 1)  # the model call is in flight

    took = await cancel_and_wait(handle)
    assert took < 10
    assert await activity_events(handle) == [
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
    ]
    description = await handle.describe()
    assert description.status is not None and description.status.name == "CANCELED"


async def test_cancel_during_a_tool_call(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("echo", {"text": "first"})),
        fake.tool_calls(fake.call("slow_tool", {"seconds": 60}, id="slow")),
    )
    handle = await agent.start({"prompt": "x", "tools": ["echo", "slow_tool"]})
    await wait_until(lambda: executions[f"started:{handle.id}/2/slow"] == 1)

    took = await cancel_and_wait(handle)
    assert took < 10
    assert executions[f"cancelled:{handle.id}/2/slow"] == 1  # the tool itself saw the cancel
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED in await activity_events(handle)
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert details == "cancelled at turn 2 after 1 tool calls · 30 tokens"
