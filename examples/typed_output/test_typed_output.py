"""The quoter's typed answer: a valid `Quote`, and an invalid answer sent back to the model with
the validation errors until it gives up (`invalid_output`): `AgentTestEnvironment` and a
scripted `TestModel`."""

from __future__ import annotations

import pytest

from durable_agents.testing import AgentTestEnvironment, TestModel, call
from examples.typed_output.agent import Quote, quoter
from examples.typed_output.quote import quote


async def test_the_answer_is_a_validated_quote() -> None:
    model = TestModel(
        [
            call("unit_price", item="shirt"),
            call("final_result", item="shirt", quantity=17, total=425.0),
        ]
    )
    async with AgentTestEnvironment.start([quoter]) as env:
        with quoter.override(model=model):
            got = await quote(env.agents, "17 shirts", task_queue=env.task_queue)
    assert got == Quote(item="shirt", quantity=17, total=425.0)


async def test_an_answer_that_breaks_the_schema_goes_back_then_the_run_says_why() -> None:
    invalid = call("final_result", item="shirt", quantity=0, total=0.0)
    model = TestModel([invalid, invalid, invalid])
    async with AgentTestEnvironment.start([quoter]) as env:
        with quoter.override(model=model), pytest.raises(ValueError) as refused:
            await quote(env.agents, "no shirts", task_queue=env.task_queue)
    assert "invalid_output" in str(refused.value) and "quantity" in str(refused.value)
    retried = model.requests[1].messages[-1]["content"]
    assert "quantity" in retried  # the model was told what to fix
