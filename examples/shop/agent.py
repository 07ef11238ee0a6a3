"""The shop's agent and its tools. The tools get the shop (`Shop`: a price list and an order
book) as their dependency, from the worker; nothing of it enters the workflow history."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from durable_agents import Agent, ToolContext, ToolError


@dataclass
class Shop:
    """What the tools work on: the prices and the orders placed so far."""

    prices: dict[str, float]
    orders: list[tuple[str, int]] = field(default_factory=list)


shop: Agent[Shop] = Agent(
    "shop",
    instructions=(
        "You are a shop assistant. Answer price questions with the price tool; place an order "
        "only when the customer asks for one, and say what it costs in total."
    ),
    deps_type=Shop,
    tools=["calculator"],
)


@shop.tool
async def price(ctx: ToolContext[Shop], item: str) -> float:
    """The unit price of an item, in dollars.

    Args:
        item: The item, as the customer named it (singular, lower case).
    """
    if item not in ctx.deps.prices:
        raise ToolError(f"we do not sell {item!r}; we sell {', '.join(sorted(ctx.deps.prices))}")
    return ctx.deps.prices[item]


@shop.tool(requires_approval=True, start_to_close_timeout=timedelta(seconds=30))
async def order(ctx: ToolContext[Shop], item: str, quantity: int) -> str:
    """Place an order; a person approves it first.

    Args:
        item: The item to order.
        quantity: How many, at least 1.
    """
    if quantity < 1:
        raise ToolError("the quantity must be at least 1")
    ctx.deps.orders.append((item, quantity))
    return f"ordered {quantity} x {item}"
