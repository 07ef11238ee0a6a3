"""What a person sees in the Web UI and through queries: activity summaries, the memo, the
`status` query through each state of a run, and current details. The model is the scripted
in-memory one; a gated model reply and a gated tool hold each state until the test has seen it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

from durable_agents.contracts.agent_status import AgentStatus
from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.agent_test_tools import gates
from tests.conftest import ScriptedHarness, local_activities


async def status_when(
    handle: WorkflowHandle[Any, Any], ready: Callable[[AgentStatus], bool], what: str
) -> AgentStatus:
    async def probe() -> AgentStatus:
        status = await handle.query("status", result_type=AgentStatus)
        assert ready(status), status
        return status

    return await eventually(probe, what=what)


async def test_activities_carry_summaries_and_the_run_a_memo(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("calculator", {"expression": "17 * 25"})), sm.text("425")
    )
    _, handle = await scripted_agent.run(
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
    recorded, *calls = summaries
    assert recorded[0] == "record_definition"
    assert recorded[1].startswith('"definition started: assistant@'), recorded
    assert calls == [
        ("call_model", '"fake-model-1 · turn 1"'),
        ("call_model", '"fake-model-1 · turn 2"'),
    ]
    # The calculator is a local activity: its marker carries the summary.
    assert await local_activities(handle) == [("calculator", '{"expression": "17 * 25"}')]
    memo = await (await handle.describe()).memo()
    assert memo["prompt"] == "17 shirts at 25?"
    assert memo["tools"] == ["calculator"]
    assert memo["model"] == "fake-model-1"
    assert memo["definition"] == recorded[1].split(": ")[1].rstrip('"')
    assert len(memo["definition_digest"]) == 64


async def test_status_follows_every_state(scripted_agent: ScriptedHarness) -> None:
    answer = asyncio.Event()
    tool = f"tool-{uuid.uuid4()}"
    scripted_agent.model.enqueue(
        sm.gate(answer, sm.tool_calls(sm.call("gated", {"label": tool}))),
        sm.tool_calls(sm.call("write_file", {"path": "s.txt", "content": "s"}, id="w")),
        sm.text("done"),
    )
    handle = await scripted_agent.start({"prompt": "x", "tools": ["gated", "write_file"]})

    # Each state lasts until the test lets the run go on, so no state can be missed.
    thinking = await status_when(handle, lambda s: s.phase == "thinking", "thinking")
    assert thinking.iteration == 1 and thinking.usage.total_tokens == 0
    answer.set()
    running = await status_when(handle, lambda s: s.phase == "running_tools", "running tools")
    assert running.usage.total_tokens == 15
    gates[tool].set()
    waiting = await status_when(handle, lambda s: s.phase == "waiting_for_human", "waiting")
    assert [p.call_id for p in waiting.pending] == ["w"]
    assert waiting.steps == 1 and waiting.recent_steps[0].tool == "gated"
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    # Markdown: the call and the command sit in code spans, so the Web UI shows them literally.
    assert 'waiting for approval: `write_file {"path": "s.txt", "content": "s"' in details
    command = f"temporal workflow signal --workflow-id {handle.id} --name approve"
    address = scripted_agent.client.service_client.config.target_host  # (issue 31, item 8)
    assert f'`{command} --input \'{{"call_id": "w"}}\' --address {address}`' in details
    await handle.signal("approve", {"call_id": "w"})
    await handle.result()
    done = await status_when(handle, lambda s: s.phase == "done", "done")
    assert (done.stop_reason, done.iteration, done.steps) == ("completed", 3, 2)
