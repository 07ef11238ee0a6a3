"""The caterer asks how many people there are and plans with the reply: `AgentTestEnvironment`
and a scripted `TestModel`."""

from __future__ import annotations

from durable_agents.testing import AgentTestEnvironment, TestModel, call, text
from examples.ask_user.agent import caterer
from examples.ask_user.plan import plan


async def test_the_question_waits_for_the_reply_which_the_model_reads() -> None:
    asked: list[str] = []

    def person(question: str) -> str:
        asked.append(question)
        return "We are 8."

    model = TestModel(
        [call("ask_user", question="How many people are there?"), text("Order 4 pizzas.")]
    )
    async with AgentTestEnvironment.start([caterer]) as env:
        with caterer.override(model=model):
            answer = await plan(env.agents, "Order pizza", person, task_queue=env.task_queue)
    assert asked == ["How many people are there?"]
    assert answer == "Order 4 pizzas."
    reply = model.requests[1].messages[-1]
    assert reply["role"] == "tool" and reply["content"] == "We are 8."
