"""The `cashier` in code mode: the model gets one tool, `run_code`, whose script calls the
agent's tools as async functions (in loops, in parallel with `asyncio.gather`). The script runs in
the pydantic-monty sandbox (the `code` extra), stepped by activities; each tool call it makes is
still its own activity in the run's history, under the run's approval policy. Ten prices cost two
model calls instead of eleven.
"""

from __future__ import annotations

from durable_agents import Agent, ToolError

PRICES = {"apple": 0.5, "bread": 2.2, "cheese": 4.75, "dates": 3.1, "eggs": 2.9}
"""Unit prices, in euros."""

cashier: Agent[None] = Agent(
    "cashier",
    instructions="Add up baskets: call price for every item in one script, then sum.",
    code_mode=True,
)


@cashier.tool
async def price(item: str) -> float:
    """The price of one item, in euros.

    Args:
        item: The item, singular and lower case.
    """
    if item not in PRICES:
        raise ToolError(f"no price for {item!r}")
    return PRICES[item]
