"""What a person sees in the Web UI and through queries: activity summaries, the memo, the
`status` query through each state of a run, and current details."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

from contracts.agent_status import AgentStatus
from tests import fake_openai as fake
from tests.conftest import AgentHarness


async def status_when(
    handle: WorkflowHandle[Any, Any], ready: Callable[[AgentStatus], bool]
) -> AgentStatus:
    for _ in range(300):
        status = await handle.query("status", result_type=AgentStatus)
        if ready(status):
            return status
        await asyncio.sleep(0.05)
    raise AssertionError(f"status never ready: {status}")


async def test_activities_carry_summaries_and_the_run_a_memo(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("calculator", {"expression": "17 * 25"})), fake.text("425")
    )
    _, handle = await agent.run(
        {"prompt": "17 shirts at 25?", "tools": ["calculator"], "model": "fake-model-1"}
    )
    history = await handle.fetch_history()
    summaries = [
        (
            e.activity_task_scheduled_event_attributes.activity_type.name,
            e.user_metadata.summary.data.decode(),
        )
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert summaries == [
        ("call_model", '"fake-model-1 · turn 1"'),
        ("calculator", '"{\\"expression\\": \\"17 * 25\\"}"'),
        ("call_model", '"fake-model-1 · turn 2"'),
    ]
    memo = await (await handle.describe()).memo()
    assert memo["prompt"] == "17 shirts at 25?"
    assert memo["tools"] == ["calculator"]
    assert memo["model"] == "fake-model-1"


async def test_status_follows_every_state(agent: AgentHarness) -> None:
    replies: list[Any] = [
        fake.delay(1.0, fake.tool_calls(fake.call("slow_tool", {"seconds": 1.0}))),
        fake.tool_calls(fake.call("write_file", {"path": "s.txt", "content": "s"}, id="w")),
        fake.text("done"),
    ]
    agent.fake.set_handler(lambda body: replies.pop(0))
    handle = await agent.start({"prompt": "x", "tools": ["slow_tool", "write_file"]})

    thinking = await status_when(handle, lambda s: s.phase == "thinking")
    assert thinking.iteration == 1 and thinking.usage.total_tokens == 0
    running = await status_when(handle, lambda s: s.phase == "running_tools")
    assert running.usage.total_tokens == 15
    waiting = await status_when(handle, lambda s: s.phase == "waiting_for_human")
    assert [p.call_id for p in waiting.pending] == ["w"]
    assert waiting.steps == 1 and waiting.recent_steps[0].tool == "slow_tool"
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    # Markdown: the call and the command sit in code spans, so the Web UI shows them literally.
    assert 'waiting for approval: `write_file {"content": "s"' in details
    command = f"temporal workflow signal --workflow-id {handle.id} --name approve"
    assert f"`{command} --input '{{\"call_id\": \"w\"}}'`" in details
    await handle.signal("approve", {"call_id": "w"})
    await handle.result()
    done = await status_when(handle, lambda s: s.phase == "done")
    assert (done.stop_reason, done.iteration, done.steps) == ("completed", 3, 2)
