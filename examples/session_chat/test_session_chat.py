"""The concierge's chat, tested as an application tests its agents: `AgentTestEnvironment` (a
real time-skipping Temporal server, a worker with the plugin) and a scripted `TestModel`."""

from __future__ import annotations

from durable_agents.testing import AgentTestEnvironment, TestModel, call, text
from examples.session_chat.agent import concierge
from examples.session_chat.chat import chat, open_session


async def test_each_line_is_a_turn_that_sees_the_turns_before() -> None:
    model = TestModel(
        [
            call("opening_hours", day="saturday"),
            text("On Saturday the spa is open 10-14."),
            text("You asked about Saturday."),
        ]
    )
    async with AgentTestEnvironment.start([concierge]) as env:
        with concierge.override(model=model):
            session = await open_session(env.agents, "guest-42", task_queue=env.task_queue)
            answers = await chat(session, ["When is the spa open on Saturday?", "Which day?", ""])
            again = await open_session(env.agents, "guest-42", task_queue=env.task_queue)
            status = await again.status()
    assert answers == ["On Saturday the spa is open 10-14.", "You asked about Saturday."]
    assert status.turns == 2  # reopening the id continues the same conversation
    second_turn = model.requests[-1].messages
    assert any("10-14" in str(message.get("content")) for message in second_turn)


async def test_a_day_the_tool_does_not_know_goes_back_to_the_model() -> None:
    model = TestModel([call("opening_hours", day="friday"), text("I have no hours for Friday.")])
    async with AgentTestEnvironment.start([concierge]) as env:
        with concierge.override(model=model):
            session = await open_session(env.agents, "guest-7", task_queue=env.task_queue)
            answers = await chat(session, ["And on Friday?"])
    assert answers == ["I have no hours for Friday."]
    tool_message = model.requests[1].messages[-1]
    assert tool_message["role"] == "tool" and "no hours for 'friday'" in tool_message["content"]
