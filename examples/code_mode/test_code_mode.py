"""The cashier's script prices five items in parallel: two model calls in all, the script's
result the observation; `AgentTestEnvironment` and a scripted `TestModel`."""

from __future__ import annotations

import pytest

from durable_agents.testing import AgentTestEnvironment, TestModel, call, text
from examples.code_mode.agent import cashier
from examples.code_mode.total import total

SCRIPT = """
import asyncio
items = ["apple", "bread", "cheese", "dates", "eggs"]
prices = await asyncio.gather(*[price(item=item) for item in items])
round(sum(float(p) for p in prices), 2)
"""


async def test_one_script_calls_every_tool_and_two_model_calls_do_it_all(
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = TestModel([call("run_code", code=SCRIPT), text("The total is 13.45 euros.")])
    async with AgentTestEnvironment.start([cashier]) as env:
        with cashier.override(model=model):
            answer = await total(env.agents, "five things", task_queue=env.task_queue)
    assert answer == "The total is 13.45 euros."
    assert model.requests[1].messages[-1]["content"] == "13.45"
    assert "2 model calls" in capsys.readouterr().out
    offered = [tool["function"]["name"] for tool in model.requests[0]["tools"]]
    assert offered == ["run_code"]
