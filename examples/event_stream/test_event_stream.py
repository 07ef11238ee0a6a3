"""A run's events followed live from code, in order, ending with the run: `AgentTestEnvironment`
and a scripted `TestModel`."""

from __future__ import annotations

from durable_agents.testing import AgentTestEnvironment, TestModel, call, text
from examples.event_stream.agent import adder
from examples.event_stream.follow import follow


async def test_every_event_of_the_run_in_order_and_the_stream_ends_with_it() -> None:
    model = TestModel([call("calculator", expression="17 * 25"), text("425")])
    async with AgentTestEnvironment.start([adder]) as env:
        with adder.override(model=model):
            types = await follow(env.agents, "What is 17 * 25?", task_queue=env.task_queue)
    assert types == [
        "run_started",
        "model_call_started",
        "model_call_finished",
        "tool_call_started",
        "tool_call_finished",
        "model_call_started",
        "model_call_finished",
        "run_finished",
    ]
