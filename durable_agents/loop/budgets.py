"""Token and cost budgets: what a run has spent, and whether it may go on."""

from __future__ import annotations

from collections.abc import Mapping

from durable_agents.contracts.agent_result import StopReason
from durable_agents.contracts.budgets import ModelPrice
from durable_agents.contracts.usage import TokenUsage


class NoPrice(ValueError):
    """The price table has no entry for a model (and no `*` entry)."""


def price_for(model: str, prices: Mapping[str, ModelPrice]) -> ModelPrice:
    """The price of `model`: an exact entry, else the longest entry that prefixes it (providers
    answer `gpt-4o-mini-2024-07-18` for `gpt-4o-mini`), else the `*` entry."""
    prefixes = sorted((k for k in prices if k != "*" and model.startswith(k)), key=len)
    price = prices.get(model) or (prices[prefixes[-1]] if prefixes else None) or prices.get("*")
    if price is None:
        raise NoPrice(
            f"cost_budget.prices has no price for model {model!r} (known: "
            f"{', '.join(prices)}); add it or a '*' entry"
        )
    return price


def cost_of(usage: TokenUsage, price: ModelPrice) -> float:
    """US dollars for `usage` at `price`."""
    return (
        usage.prompt_tokens * price.input_per_million
        + usage.completion_tokens * price.output_per_million
    ) / 1_000_000


def budget_exceeded(
    usage: TokenUsage,
    cost_usd: float | None,
    max_total_tokens: int | None,
    max_usd: float | None,
) -> StopReason | None:
    """`token_budget` / `cost_budget` when a limit is passed, else None."""
    if max_total_tokens is not None and usage.total_tokens > max_total_tokens:
        return StopReason.TOKEN_BUDGET
    if max_usd is not None and cost_usd is not None and cost_usd > max_usd:
        return StopReason.COST_BUDGET
    return None


def budget_message(
    reason: StopReason, usage: TokenUsage, cost_usd: float | None, limit: float
) -> str:
    """The answer of a run stopped by a budget."""
    if reason == "token_budget":
        return (
            f"Stopped: the token budget of {int(limit)} tokens was used up "
            f"({usage.total_tokens} tokens spent). The steps so far are in the result."
        )
    return (
        f"Stopped: the cost budget of ${limit:g} was used up (${cost_usd or 0:.4f} spent). "
        "The steps so far are in the result."
    )
