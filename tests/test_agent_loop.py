"""The agent loop end to end: real Temporal dev server, real worker, and a scripted in-memory
model (the loop does not depend on the HTTP hop); the secrets test keeps the real `openai` client
and the fake OpenAI-compatible server. Each behaviour is asserted on the result and on the
history."""

from __future__ import annotations

import json
import uuid

from temporalio.api.enums.v1 import EventType

from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.testing import fake_openai as fake
from tests import scripted_model as sm
from tests.agent_test_tools import executions
from tests.conftest import (
    FAKE_MODEL,
    SECRET_API_KEY,
    AgentHarness,
    ScriptedHarness,
    activity_types,
    history_json,
    local_activities,
)


def tool_messages(request: ModelRequest) -> list[ChatMessage]:
    return [m for m in request.messages if m.role == "tool"]


def tool_names(request: ModelRequest) -> list[str]:
    return [t.name for t in request.tools]


async def test_tool_runs_and_loop_resumes_with_its_result(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("calculator", {"expression": "17 * 25"}, id="call_a")),
        sm.text("17 shirts cost 425 dollars.", usage=(30, 7)),
    )
    result, handle = await scripted_agent.run({"prompt": "17 shirts at 25 dollars each?"})

    assert result.answer == "17 shirts cost 425 dollars."
    assert result.stop_reason == "completed"
    assert result.iterations == 2
    assert result.model == FAKE_MODEL
    [step] = result.steps
    assert (step.call_id, step.tool, step.args, step.observation, step.status) == (
        "call_a",
        "calculator",
        {"expression": "17 * 25"},
        "425",
        "ok",
    )
    assert step.started_at <= step.finished_at
    assert result.usage.prompt_tokens == 10 + 30
    assert result.usage.total_tokens == 15 + 37
    # Each model call is in the result with its own usage and timing.
    assert [
        (c.turn, c.purpose, c.usage.total_tokens, c.tool_calls) for c in result.model_calls
    ] == [
        (1, "turn", 15, 1),
        (2, "turn", 37, 0),
    ]
    assert all(c.started_at <= c.finished_at for c in result.model_calls)
    assert result.model_calls[0].finish_reason == "tool_calls"
    # The second model call saw the assistant tool call and its result, paired by id.
    second = scripted_agent.model.requests[1]
    assert second.messages[2].tool_calls[0].id == "call_a"
    assert tool_messages(second) == [ChatMessage.tool_result("call_a", "425")]
    assert tool_names(scripted_agent.model.requests[0])[:3] == [
        "calculator",
        "current_time",
        "read_file",
    ]
    assert await activity_types(handle) == ["call_model", "call_model"]
    assert await local_activities(handle) == [("calculator", '{"expression": "17 * 25"}')]


async def test_one_run_is_one_execution_with_one_activity_per_call(
    scripted_agent: ScriptedHarness,
) -> None:
    """One activity per call: `echo` a regular one, `calculator` a local one (a marker)."""
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("echo", {"text": "a"})),
        sm.tool_calls(sm.call("echo", {"text": "b"}), sm.call("calculator", {"expression": "1+1"})),
        sm.text("done"),
    )
    result, handle = await scripted_agent.run({"prompt": "go", "tools": ["echo", "calculator"]})

    assert result.answer == "done"
    assert [s.observation for s in result.steps] == ["a", "b", "2"]
    assert await activity_types(handle) == [
        "call_model", "echo", "call_model", "echo", "call_model",
    ]  # fmt: skip
    assert await local_activities(handle) == [("calculator", '{"expression": "1+1"}')]
    history = await handle.fetch_history()
    started = [
        e for e in history.events if e.HasField("workflow_execution_started_event_attributes")
    ]
    assert len(started) == 1
    assert scripted_agent.model.request_count == 3
    # Only the allowed tools were offered to the model.
    assert tool_names(scripted_agent.model.requests[0]) == ["calculator", "echo"]


async def test_several_tool_calls_run_concurrently_and_return_in_order(
    scripted_agent: ScriptedHarness,
) -> None:
    group = f"g-{uuid.uuid4()}"
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("rendezvous", {"group": group, "size": 3, "label": "first"}, id="c1"),
            sm.call("rendezvous", {"group": group, "size": 3, "label": "second"}, id="c2"),
            sm.call("rendezvous", {"group": group, "size": 3, "label": "third"}, id="c3"),
        ),
        sm.text("all met"),
    )
    result, handle = await scripted_agent.run({"prompt": "meet", "tools": ["rendezvous"]})

    assert [s.status for s in result.steps] == ["ok", "ok", "ok"]
    assert [s.call_id for s in result.steps] == ["c1", "c2", "c3"]
    sent = tool_messages(scripted_agent.model.requests[1])
    assert [m.tool_call_id for m in sent] == ["c1", "c2", "c3"]
    assert sent[0].content == "first met 2 others"
    # All three were scheduled in one workflow task, before any of them completed.
    history = await handle.fetch_history()
    kinds = [e.event_type for e in history.events]
    scheduled = [
        i
        for i, e in enumerate(history.events)
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name != "record_definition"
    ]
    first_tool = scheduled[1]
    first_tool_done = kinds.index(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, first_tool)
    assert scheduled[1:4] == [first_tool, first_tool + 1, first_tool + 2]
    assert scheduled[3] < first_tool_done


async def test_demo_of_secret_never_entering_history(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("echo", {"text": "hi"}, id="e1")), fake.text("bye")
    )
    result, handle = await agent.run({"prompt": "hello", "tools": ["echo"]})
    assert result.answer == "bye"
    assert agent.fake.requests[0].headers["authorization"] == f"Bearer {SECRET_API_KEY}"
    dumped = await history_json(handle)
    assert SECRET_API_KEY not in dumped
    assert SECRET_API_KEY not in json.dumps(result.model_dump(mode="json"))
    assert executions[f"{handle.id}/1/e1"] == 1  # the tool did run in this run
