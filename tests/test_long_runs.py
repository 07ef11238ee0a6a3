"""Long runs stay bounded: a run continues a conversation, continues-as-new mid-loop carrying
its scratchpad, and its model activities carry only new messages (with a full resend when the
worker's context cache does not hold the conversation). Loop logic, so the worker's model is the
scripted in-memory one."""

from __future__ import annotations

import json
import uuid

from temporalio.api.enums.v1 import EventType

from durable_agents.contracts.model_io import ModelRequest
from durable_agents.contracts.session import TurnResult
from tests import scripted_model as sm
from tests.conftest import ScriptedHarness, activity_types


def numbered_calls(request: ModelRequest) -> sm.ReplyLike:
    """A new echo call every turn (distinct arguments, so no repeat warnings)."""
    return sm.tool_calls(sm.call("echo", {"text": f"turn {len(request.messages)}"}))


async def test_a_run_can_continue_a_conversation(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(sm.text("You are Ann."))
    history = [
        {"role": "user", "content": "I am Ann."},
        {"role": "assistant", "content": "Hello Ann."},
    ]
    result, _ = await scripted_agent.run({"prompt": "Who am I?", "history": history})
    assert result.answer == "You are Ann."
    sent = scripted_agent.model.last_request.messages
    assert [(m.role, m.content) for m in sent] == [
        ("system", "You are a helpful assistant."),
        ("user", "I am Ann."),
        ("assistant", "Hello Ann."),
        ("user", "Who am I?"),
    ]


async def test_long_run_continues_as_new_and_keeps_its_state(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(numbered_calls)
    result, handle = await scripted_agent.run(
        {"prompt": "go", "tools": ["echo"], "max_iterations": 25,
         "continue_as_new_after_events": 100}
    )  # fmt: skip
    assert result.stop_reason == "max_iterations"
    assert result.iterations == 25
    assert len(result.steps) == 24  # the scratchpad's steps survived each continue-as-new
    assert result.usage.total_tokens == 25 * 15
    assert [s.iteration for s in result.steps] == list(range(1, 25))
    first_run = scripted_agent.client.get_workflow_handle(
        handle.id, run_id=handle.first_execution_run_id
    )
    events = (await first_run.fetch_history()).events
    assert events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
    assert len(events) <= 110
    # The model kept seeing the whole conversation across runs.
    last = scripted_agent.model.last_request.messages
    assert len([m for m in last if m.role == "tool"]) == 24
    # ... and the next run's first call named the carried messages the cache held.
    attributes = events[-1].workflow_execution_continued_as_new_event_attributes
    second = scripted_agent.client.get_workflow_handle(
        handle.id, run_id=attributes.new_execution_run_id
    )
    [first_call, *_] = [
        json.loads(e.activity_task_scheduled_event_attributes.input.payloads[0].data)
        async for e in second.fetch_history_events()
        if e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
    ]
    assert first_call["context"]["held"] > 0 and first_call["context"]["reuse"]
    assert scripted_agent.cache.misses == 0


async def test_model_activities_carry_only_new_messages(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.set_handler(numbered_calls)
    sizes: dict[str, int] = {}
    for transfer in ("delta", "full"):
        _, handle = await scripted_agent.run(
            {"prompt": "go", "tools": ["echo"], "max_iterations": 12, "context_transfer": transfer}
        )
        history = await handle.fetch_history()
        inputs = [
            len(e.activity_task_scheduled_event_attributes.input.SerializeToString())
            for e in history.events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
        ]
        sizes[transfer] = inputs[-1] - inputs[1]  # growth between turn 2 and turn 12
    assert sizes["full"] > 1000
    assert sizes["delta"] < 100  # flat: each turn carries one assistant + one tool message


async def test_context_cache_miss_resends_the_whole_conversation(
    scripted_agent: ScriptedHarness,
) -> None:
    def model(request: ModelRequest) -> sm.ReplyLike:
        if len(request.messages) == 4:  # the second call: forget everything the worker held
            scripted_agent.cache._entries.clear()
        if len(request.messages) >= 8:
            return sm.text("done")
        return numbered_calls(request)

    scripted_agent.model.set_handler(model)
    result, handle = await scripted_agent.run({"prompt": "go", "tools": ["echo"]})
    assert result.answer == "done"
    assert scripted_agent.cache.misses == 1
    # Same conversation, sent whole after the miss.
    assert [len(r.messages) for r in scripted_agent.model.requests] == [2, 4, 6, 8]
    types = await activity_types(handle)
    assert types.count("call_model") == 5  # the missed call, then its full resend


async def test_a_turn_that_outgrows_its_session_moves_to_a_child_run(
    scripted_agent: ScriptedHarness,
) -> None:
    """An inline turn cannot continue-as-new (the `send` update waits on the session): past its
    threshold the rest of it runs as the child run `<session>/turn-1`, from its carried state,
    and answers the update as a child turn does."""
    scripted_agent.model.set_handler(numbered_calls)
    session_id = f"session-{uuid.uuid4()}"
    agent = {"tools": ["echo"], "max_iterations": 25, "continue_as_new_after_events": 100}
    session = await scripted_agent.client.start_workflow(
        "SessionWorkflow", {"agent": agent}, id=session_id, task_queue=scripted_agent.task_queue
    )
    result = await session.execute_update("send", {"text": "go"}, result_type=TurnResult)
    assert (result.stop_reason, result.workflow_id) == ("max_iterations", f"{session_id}/turn-1")
    assert [s.iteration for s in result.steps] == list(range(1, 25))  # none lost in the move
    session_events = [e async for e in session.fetch_history_events()]
    assert any(
        e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
        for e in session_events
    )
    assert len(session_events) < 150  # the session stopped growing at the threshold
    child = scripted_agent.client.get_workflow_handle(result.workflow_id)
    in_session = [
        e
        for e in session_events
        if e.activity_task_scheduled_event_attributes.activity_type.name == "echo"
    ]
    in_child = 0  # over the child's runs: it continues-as-new on its own
    run_id: str | None = (await child.describe()).raw_info.first_run_id
    while run_id:
        run = scripted_agent.client.get_workflow_handle(child.id, run_id=run_id)
        events = [e async for e in run.fetch_history_events()]
        in_child += sum(
            e.activity_task_scheduled_event_attributes.activity_type.name == "echo" for e in events
        )
        attributes = events[-1].workflow_execution_continued_as_new_event_attributes
        run_id = attributes.new_execution_run_id or None
    assert in_session and in_child and len(in_session) + in_child == 24
    last = scripted_agent.model.last_request.messages
    assert len([m for m in last if m.role == "tool"]) == 24
