"""The bookkeeper's plan: one planning call, two calculator steps (the second uses the first's
result), and the answer template filled in without another model call; `AgentTestEnvironment`
and a scripted `TestModel`."""

from __future__ import annotations

import pytest

from durable_agents.testing import AgentTestEnvironment, TestModel, call
from examples.plan_and_execute.agent import bookkeeper
from examples.plan_and_execute.compute import compute

PLAN = call(
    "submit_plan",
    steps=[
        {"tool": "calculator", "args": {"expression": "17 * 25"}},
        {"tool": "calculator", "args": {"expression": "${steps.1.result} + 8"}},
    ],
    answer="The answer is ${steps.2.result}.",
)


async def test_one_model_call_plans_the_engine_runs_the_steps_and_fills_the_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = TestModel([PLAN])
    async with AgentTestEnvironment.start([bookkeeper]) as env:
        with bookkeeper.override(model=model):
            answer = await compute(env.agents, "17 * 25, then add 8", task_queue=env.task_queue)
    assert answer == "The answer is 433."
    printed = capsys.readouterr().out
    assert "{'expression': '425 + 8'} -> 433" in printed
    assert "1 model call(s)" in printed and len(model.requests) == 1
