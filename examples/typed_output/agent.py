"""The `quoter`: its answer must validate against `Quote`, a pydantic model. The result's
`output` holds the validated JSON; an invalid answer goes back to the model with the validation
errors (`output_retries` times), then the run stops with `stop_reason: invalid_output`.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from durable_agents import Agent, ToolError

PRICES = {"shirt": 25.0, "hat": 12.5}
"""Unit prices, in dollars."""


class Quote(BaseModel):
    """A priced order line."""

    item: str
    quantity: int = Field(ge=1)
    total: float = Field(ge=0, description="quantity times the unit price, in dollars")


quoter: Agent[None] = Agent(
    "quoter",
    instructions="Quote orders: look the unit price up, then answer with the quote.",
    output_type=Quote,  # the model answers through a final_result tool with Quote's schema
)


@quoter.tool
async def unit_price(item: str) -> float:
    """The unit price of an item, in dollars.

    Args:
        item: The item, singular and lower case.
    """
    if item not in PRICES:
        raise ToolError(f"no price for {item!r}; items: {', '.join(PRICES)}")
    return PRICES[item]
