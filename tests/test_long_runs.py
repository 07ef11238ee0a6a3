"""Long runs stay bounded: a run continues a conversation, continues-as-new mid-loop carrying
its scratchpad, and its model activities carry only new messages (with a full resend when the
worker's context cache does not hold the conversation)."""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType

from tests import fake_openai as fake
from tests.conftest import AgentHarness, activity_types


def numbered_calls(body: dict[str, Any]) -> Any:
    """A new echo call every turn (distinct arguments, so no repeat warnings)."""
    return fake.tool_calls(fake.call("echo", {"text": f"turn {len(body['messages'])}"}))


async def test_a_run_can_continue_a_conversation(agent: AgentHarness) -> None:
    agent.fake.enqueue(fake.text("You are Ann."))
    history = [
        {"role": "user", "content": "I am Ann."},
        {"role": "assistant", "content": "Hello Ann."},
    ]
    result, _ = await agent.run({"prompt": "Who am I?", "history": history})
    assert result.answer == "You are Ann."
    sent = agent.fake.last_request["messages"]
    assert [(m["role"], m["content"]) for m in sent] == [
        ("system", "You are a helpful assistant."),
        ("user", "I am Ann."),
        ("assistant", "Hello Ann."),
        ("user", "Who am I?"),
    ]


async def test_long_run_continues_as_new_and_keeps_its_state(agent: AgentHarness) -> None:
    agent.fake.set_handler(numbered_calls)
    result, handle = await agent.run(
        {"prompt": "go", "tools": ["echo"], "max_iterations": 25,
         "continue_as_new_after_events": 100}
    )  # fmt: skip
    assert result.stop_reason == "max_iterations"
    assert result.iterations == 25
    assert len(result.steps) == 24  # the scratchpad's steps survived each continue-as-new
    assert result.usage.total_tokens == 25 * 15
    assert [s.iteration for s in result.steps] == list(range(1, 25))
    first_run = agent.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
    events = (await first_run.fetch_history()).events
    assert events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
    assert len(events) <= 110
    # The model kept seeing the whole conversation across runs.
    last = agent.fake.last_request["messages"]
    assert len([m for m in last if m["role"] == "tool"]) == 24


async def test_model_activities_carry_only_new_messages(agent: AgentHarness) -> None:
    agent.fake.set_handler(numbered_calls)
    sizes: dict[str, int] = {}
    for transfer in ("delta", "full"):
        _, handle = await agent.run(
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


async def test_context_cache_miss_resends_the_whole_conversation(agent: AgentHarness) -> None:
    def model(body: dict[str, Any]) -> Any:
        if len(body["messages"]) == 4:  # the second call: forget everything the worker held
            agent.cache._entries.clear()
        if len(body["messages"]) >= 8:
            return fake.text("done")
        return numbered_calls(body)

    agent.fake.set_handler(model)
    result, handle = await agent.run({"prompt": "go", "tools": ["echo"]})
    assert result.answer == "done"
    assert agent.cache.misses == 1
    # Same conversation, sent whole after the miss.
    assert [len(r["messages"]) for r in agent.fake.requests] == [2, 4, 6, 8]
    types = await activity_types(handle)
    assert types.count("call_model") == 5  # the missed call, then its full resend
