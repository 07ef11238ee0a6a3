"""The guide's client tool, answered by the program; a result that breaks the tool's
`result_schema` is refused and nothing enters history: `AgentTestEnvironment` and a scripted
`TestModel`."""

from __future__ import annotations

import uuid

import pytest

from durable_agents.errors import DecisionRefused
from durable_agents.testing import AgentTestEnvironment, TestModel, call, text
from examples.client_tools.agent import guide
from examples.client_tools.ask import ask


async def test_the_client_runs_the_tool_and_the_model_reads_its_result() -> None:
    model = TestModel([call("get_location"), text("In Lyon, walk up to Fourviere at dusk.")])
    async with AgentTestEnvironment.start([guide]) as env:
        with guide.override(model=model):
            answer = await ask(env.agents, "Tonight?", "Lyon", task_queue=env.task_queue)
    assert answer == "In Lyon, walk up to Fourviere at dusk."
    assert model.requests[1].messages[-1]["content"] == '{"city": "Lyon"}'


async def test_a_result_that_breaks_the_schema_is_refused_and_can_be_sent_again() -> None:
    model = TestModel([call("get_location"), text("Lyon it is.")])
    async with AgentTestEnvironment.start([guide]) as env:
        with guide.override(model=model):
            run = await env.agents.start(
                guide, "Where am I?", id=f"guide-{uuid.uuid4().hex[:6]}", task_queue=env.task_queue
            )
            request = await run.next_request()
            assert request is not None and request.kind == "client_tool"
            with pytest.raises(DecisionRefused, match="city"):
                await run.tool_result(request.call_id, result={"town": "Lyon"})
            await run.tool_result(request.call_id, result={"city": "Lyon"})
            assert (await run.result()).answer == "Lyon it is."
