"""The shop, tested the way an application tests its agents: `AgentTestEnvironment` (a real
time-skipping Temporal server and a worker with the plugin) and a scripted `TestModel`."""

from __future__ import annotations

from durable_agents.testing import AgentTestEnvironment, TestModel, call, text
from examples.shop.agent import Shop, shop
from examples.shop.order import decide_all


async def test_an_approved_order_is_placed_once() -> None:
    store = Shop(prices={"shirt": 25.0})
    model = TestModel(
        [
            call("price", item="shirt"),
            call("order", item="shirt", quantity=17),
            text("Ordered 17 shirts: 425 dollars."),
        ]
    )
    async with AgentTestEnvironment.start([shop], deps=store) as env:
        with shop.override(model=model):
            run = await env.agents.start(shop, "Order 17 shirts", id="shop-approved")
            await decide_all(run, reject=None)
            result = await run.result()
    assert store.orders == [("shirt", 17)]
    assert result.answer == "Ordered 17 shirts: 425 dollars."


async def test_a_rejected_order_is_not_placed_and_the_model_reads_why() -> None:
    store = Shop(prices={"shirt": 25.0})
    model = TestModel(
        [call("order", item="shirt", quantity=500), text("The order was rejected: too many.")]
    )
    async with AgentTestEnvironment.start([shop], deps=store) as env:
        with shop.override(model=model):
            run = await env.agents.start(shop, "Order 500 shirts", id="shop-rejected")
            await decide_all(run, reject="too many")
            result = await run.result()
    assert store.orders == []
    tool_message = model.requests[1].messages[-1]
    assert tool_message["role"] == "tool" and "too many" in tool_message["content"]
    assert result.answer == "The order was rejected: too many."


async def test_an_unknown_item_goes_back_to_the_model() -> None:
    model = TestModel([call("price", item="kilt"), text("We do not sell kilts.")])
    async with AgentTestEnvironment.start([shop], deps=Shop(prices={"shirt": 25.0})) as env:
        with shop.override(model=model):
            run = await env.agents.start(shop, "How much is a kilt?", id="shop-unknown")
            result = await run.result()
    assert result.steps[0].observation == "Error: we do not sell 'kilt'; we sell shirt"
