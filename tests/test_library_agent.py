"""The library API without the client: an `Agent` defined in code, its tools built from their
signatures, served by `DurableAgentsPlugin` on a plain temporalio `Worker`, answered by a
`TestModel` through the real `openai` client (issue 33)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import timedelta

import pytest
from pydantic import BaseModel
from temporalio.client import Client
from temporalio.worker import Worker

from durable_agents.agent import Agent
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.plugin import DurableAgentsPlugin, with_agents
from durable_agents.testing import (
    AgentTestEnvironment,
    FunctionModel,
    ModelCall,
    TestModel,
    call,
    calls,
    text,
)
from durable_agents.testing.fake_openai import ReplyLike
from durable_agents.tools.catalog import CATALOG
from durable_agents.tools.definition import ToolContext


@dataclass
class Deps:
    prices: dict[str, float]
    secret: str = "sk-never-in-history"


def make_shop() -> Agent[Deps]:
    shop: Agent[Deps] = Agent(
        "shop",
        instructions="Answer price questions with the price tool.",
        model="gpt-4.1-mini",
        deps_type=Deps,
        tools=["calculator"],
    )

    @shop.tool
    async def price(ctx: ToolContext[Deps], item: str) -> float:
        """The unit price of an item, in dollars.

        Args:
            item: The item's name, as the shop lists it.
        """
        return ctx.deps.prices[item]

    @shop.tool(start_to_close_timeout=timedelta(seconds=5))
    async def greet(name: str, times: int = 1) -> str:
        """Greet someone."""
        return " ".join([f"hello {name}"] * times)

    return shop


def test_a_tools_schema_comes_from_its_signature_and_docstring() -> None:
    shop = make_shop()
    price, greet = shop.tools
    schema = price.schema()
    assert schema.description == "The unit price of an item, in dollars."
    assert schema.parameters["properties"] == {
        "item": {
            "description": "The item's name, as the shop lists it.",
            "title": "Item",
            "type": "string",
        }
    }  # the context is not part of it
    assert schema.parameters["required"] == ["item"]
    assert greet.schema().parameters["required"] == ["name"]
    assert greet.options.start_to_close_timeout == timedelta(seconds=5)
    assert shop.tool_names == ["price", "greet", "calculator"]


def test_bad_definitions_are_refused_with_their_reason() -> None:
    shop = make_shop()

    async def no_docstring(item: str) -> str:
        return item

    async def untyped(item) -> str:  # type: ignore[no-untyped-def]
        """Untyped."""
        return str(item)

    def not_async(item: str) -> str:
        """Not async."""
        return item

    with pytest.raises(TypeError, match="needs a docstring"):
        shop.tool(no_docstring)
    with pytest.raises(TypeError, match="'item' needs an annotation"):
        shop.tool(untyped)
    with pytest.raises(TypeError, match="must be an async function"):
        shop.tool(not_async)  # type: ignore[type-var]

    async def price(item: str) -> str:
        """Again."""
        return item

    with pytest.raises(ValueError, match="already has a tool named 'price'"):
        shop.tool(price)
    with pytest.raises(ValueError, match="max_iterations"):
        Agent("bad", instructions="x", max_iterations=0)
    with pytest.raises(ValueError, match="name"):
        Agent("no spaces allowed", instructions="x")


def test_two_agents_with_one_tool_name_are_refused_by_the_plugin() -> None:
    with pytest.raises(ValueError, match="both define a tool named 'price'"):
        with_agents(CATALOG, [make_shop(), make_shop()])


async def test_a_code_agent_runs_its_tool_with_its_deps_and_keeps_them_out_of_history() -> None:
    shop = make_shop()
    model = TestModel([call("price", item="shirt"), text("A shirt costs 25 dollars.")])
    async with AgentTestEnvironment.start([shop], deps=Deps({"shirt": 25.0})) as env:
        with shop.override(model=model):
            handle = await env.client.start_workflow(
                "AgentWorkflow",
                shop.input("What does a shirt cost?"),
                id=f"shop-{uuid.uuid4().hex[:6]}",
                task_queue=env.task_queue,
                result_type=AgentResult,
            )
            result = await handle.result()
        history = json.dumps((await handle.fetch_history()).to_json_dict())
    assert result.answer == "A shirt costs 25 dollars."
    assert [(step.tool, step.observation) for step in result.steps] == [("price", "25.0")]
    first = model.requests[0]
    assert first["model"] == model.name
    assert first.messages[0]["content"] == shop.instructions
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["calculator", "greet", "price"]
    assert '"activityType": {"name": "price"}' in history.replace('":{"', '": {"')
    assert "sk-never-in-history" not in history


async def test_the_plugin_runs_on_an_applications_own_worker_beside_its_own_activities(
    temporal_env: object,
) -> None:
    from temporalio import activity
    from temporalio.testing import WorkflowEnvironment

    assert isinstance(temporal_env, WorkflowEnvironment)

    @activity.defn
    async def own_activity() -> str:
        return "mine"

    shop = make_shop()
    seen: list[list[str]] = []

    def decide(request: ModelCall) -> ReplyLike:
        seen.append(request.tool_names)
        if request.last_message.get("role") == "tool":
            return text(f"done: {request.last_message['content']}")
        return calls(call("greet", name="Ada", times=2), call("calculator", expression="17*25"))

    # An application's client has the SDK's default converter; the plugin adds pydantic's.
    client = await Client.connect(temporal_env.client.service_client.config.target_host)
    queue = f"own-{uuid.uuid4().hex[:6]}"
    plugin = DurableAgentsPlugin([shop], deps=Deps({}))
    worker = Worker(client, task_queue=queue, activities=[own_activity], plugins=[plugin])
    with shop.override(model=FunctionModel(decide)):
        async with worker:
            handle = await temporal_env.client.start_workflow(
                "AgentWorkflow", shop.input("Greet Ada twice and multiply"),
                id=f"own-{uuid.uuid4().hex[:6]}", task_queue=queue, result_type=AgentResult,
            )  # fmt: skip
            result = await handle.result()
    assert {step.tool: step.observation for step in result.steps} == {
        "greet": "hello Ada hello Ada",
        "calculator": "425",
    }
    assert result.answer.startswith("done: ")
    assert sorted(seen[0]) == ["calculator", "greet", "price"]
    names = [a.__name__ for a in worker.config(active_config=True)["activities"]]
    assert names[0] == "own_activity" and "price" in str(names)  # its own, then the engine's


class Quote(BaseModel):
    """A priced answer."""

    item: str
    total: float


async def test_typed_output_sub_agents_and_plan_mode_are_reachable_from_an_agent() -> None:
    pricer = Agent("pricer", instructions="Answer price questions.")  # no model: the parent's

    @pricer.tool
    async def unit_price(item: str) -> float:
        """The unit price of an item."""
        return {"shirt": 25.0}[item]

    quoting = Agent(
        "quoting",
        instructions="Quote totals.",
        output_type=Quote,
        agents=["pricer"],  # it may hand work to the pricer agent, a child run
    )
    planner = Agent("planner", instructions="Plan, then act.", mode="plan_and_execute")
    assert planner.input("x").mode == "plan_and_execute"

    def decide(request: ModelCall) -> ReplyLike:
        system = request.messages[0]["content"]
        if system.startswith("Answer price questions"):  # the child run, as the pricer
            if request.last_message.get("role") == "tool":
                return text(f"{request.last_message['content']} dollars each")
            return call("unit_price", item="shirt")
        if request.last_message.get("role") == "tool":
            return call("final_result", item="shirt", total=425.0)
        return call("pricer", task="What does one shirt cost?")

    async with AgentTestEnvironment.start([pricer, quoting]) as env:
        with quoting.override(model=FunctionModel(decide)):
            result = await env.client.execute_workflow(
                "AgentWorkflow", quoting.input("17 shirts?"), id=f"q-{uuid.uuid4().hex[:6]}",
                task_queue=env.task_queue, result_type=AgentResult,
            )  # fmt: skip
    assert Quote.model_validate(result.output) == Quote(item="shirt", total=425.0)
    assert [(s.tool, s.observation) for s in result.steps[:1]] == [("pricer", "25.0 dollars each")]
