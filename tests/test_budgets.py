"""Token and cost budgets (`loop.budgets`, `contracts.budgets`)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from durable_agents.contracts.budgets import CostBudget, ModelPrice
from durable_agents.contracts.stop_reason import StopReason
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.budgets import NoPrice, budget_exceeded, budget_message, cost_of, price_for

GPT4O = ModelPrice(input_per_million=2.5, output_per_million=10)
MINI = ModelPrice(input_per_million=0.15, output_per_million=0.6)
ANY = ModelPrice(input_per_million=1, output_per_million=1)
GPT = ModelPrice(input_per_million=5, output_per_million=5)


def usage(prompt: int = 0, completion: int = 0, total: int | None = None) -> TokenUsage:
    return TokenUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion if total is None else total,
    )


# --- price_for --------------------------------------------------------------------------------


def test_exact_entry_wins() -> None:
    prices = {"gpt-4o": GPT4O, "gpt-4o-mini": MINI, "*": ANY}
    assert price_for("gpt-4o", prices) is GPT4O
    assert price_for("gpt-4o-mini", prices) is MINI


def test_exact_entry_beats_a_prefix() -> None:
    assert price_for("gpt-4o", {"gpt": GPT, "gpt-4o": GPT4O}) is GPT4O


@pytest.mark.parametrize(
    "prices",
    [
        {"gpt-4o": GPT4O, "gpt-4o-mini": MINI, "*": ANY},
        {"gpt-4o-mini": MINI, "gpt-4o": GPT4O},
        {"gpt": GPT, "gpt-4o-mini": MINI, "gpt-4o": GPT4O},
    ],
)
def test_longest_prefix_wins_whatever_the_order(prices: dict[str, ModelPrice]) -> None:
    assert price_for("gpt-4o-mini-2024-07-18", prices) is MINI
    assert price_for("gpt-4o-2024-08-06", prices) is GPT4O


def test_prefix_beats_the_star() -> None:
    assert price_for("gpt-4o-2024-08-06", {"*": ANY, "gpt-4o": GPT4O}) is GPT4O


def test_star_is_the_fallback() -> None:
    prices = {"gpt-4o": GPT4O, "*": ANY}
    assert price_for("claude-3-5-sonnet", prices) is ANY
    assert price_for("gpt-4", prices) is ANY  # "gpt-4o" does not prefix "gpt-4"


def test_star_is_not_a_prefix_or_glob() -> None:
    with pytest.raises(NoPrice):
        price_for("*-model", {"gpt-4o": GPT4O, "gpt*": GPT})


def test_no_price_names_the_model_and_the_known_keys() -> None:
    with pytest.raises(NoPrice) as error:
        price_for("llama-3-70b", {"gpt-4o": GPT4O, "gpt-4o-mini": MINI})
    message = str(error.value)
    assert "'llama-3-70b'" in message
    assert "gpt-4o, gpt-4o-mini" in message
    assert "'*'" in message
    assert isinstance(error.value, ValueError)


def test_no_price_with_an_empty_table() -> None:
    with pytest.raises(NoPrice, match="'m'"):
        price_for("m", {})


def test_free_model_is_priced_not_missing() -> None:
    free = ModelPrice(input_per_million=0, output_per_million=0)
    assert price_for("local", {"local": free, "*": ANY}) is free
    assert price_for("local-7b", {"local": free, "*": ANY}) is free


# --- cost_of ----------------------------------------------------------------------------------


def test_cost_of_prices_input_and_output_per_million() -> None:
    assert cost_of(usage(1_000_000, 0), GPT4O) == pytest.approx(2.5)
    assert cost_of(usage(0, 1_000_000), GPT4O) == pytest.approx(10)
    assert cost_of(usage(1200, 300), GPT4O) == pytest.approx((1200 * 2.5 + 300 * 10) / 1e6)
    assert cost_of(usage(1200, 300), MINI) == pytest.approx(0.00036)
    assert cost_of(usage(), GPT4O) == 0


def test_cost_of_ignores_total_tokens() -> None:
    assert cost_of(usage(10, 10, total=1_000_000), ANY) == pytest.approx(20 / 1e6)


# --- budget_exceeded --------------------------------------------------------------------------


def test_no_limits_never_stop() -> None:
    assert budget_exceeded(usage(10**9, 10**9), 10**6, None, None) is None


def test_token_budget_is_strictly_greater_than() -> None:
    assert budget_exceeded(usage(600, 400), None, 1000, None) is None
    assert budget_exceeded(usage(600, 401), None, 1000, None) == "token_budget"


def test_token_budget_uses_total_tokens() -> None:
    assert budget_exceeded(usage(0, 0, total=1001), None, 1000, None) == "token_budget"
    assert budget_exceeded(usage(2000, 0, total=10), None, 1000, None) is None


def test_cost_budget_is_strictly_greater_than() -> None:
    assert budget_exceeded(usage(), 0.5, None, 0.5) is None
    assert budget_exceeded(usage(), 0.5000001, None, 0.5) == "cost_budget"


def test_unknown_cost_never_exceeds_a_cost_budget() -> None:
    assert budget_exceeded(usage(10**9), None, None, 0.01) is None


def test_token_budget_is_reported_first() -> None:
    assert budget_exceeded(usage(2000), 5.0, 1000, 1.0) == "token_budget"
    assert budget_exceeded(usage(10), 5.0, 1000, 1.0) == "cost_budget"


# --- budget_message ---------------------------------------------------------------------------


def test_token_budget_message() -> None:
    assert budget_message(StopReason.TOKEN_BUDGET, usage(1500, 700), None, 2000.0) == (
        "Stopped: the token budget of 2000 tokens was used up (2200 tokens spent). "
        "The steps so far are in the result."
    )


def test_cost_budget_message() -> None:
    assert budget_message(StopReason.COST_BUDGET, usage(1), 0.123456, 0.1) == (
        "Stopped: the cost budget of $0.1 was used up ($0.1235 spent). "
        "The steps so far are in the result."
    )


def test_cost_budget_message_without_a_cost() -> None:
    assert "($0.0000 spent)" in budget_message(StopReason.COST_BUDGET, usage(), None, 1.0)


def test_token_budget_message_shows_large_limits_in_full() -> None:
    """Regression: the limit was formatted with `:g`, which printed 1e+06."""
    message = budget_message(StopReason.TOKEN_BUDGET, usage(900_000, 200_000), None, 1_000_000.0)
    assert "1e+06" not in message
    assert "budget of 1000000 tokens" in message.replace(",", "")


# --- CostBudget / ModelPrice validation -------------------------------------------------------


def test_cost_budget_accepts_a_valid_table() -> None:
    budget = CostBudget.model_validate(
        {
            "max_usd": 0.5,
            "prices": {
                "gpt-4o": {"input_per_million": 2.5, "output_per_million": 10},
                "*": {"input_per_million": 0, "output_per_million": 0},
            },
        }
    )
    assert budget.prices["gpt-4o"] == GPT4O
    assert budget.prices["*"].input_per_million == 0


@pytest.mark.parametrize("max_usd", [0, -0.01, -5])
def test_cost_budget_refuses_non_positive_max_usd(max_usd: float) -> None:
    with pytest.raises(ValidationError, match="max_usd"):
        CostBudget(max_usd=max_usd, prices={"*": ANY})


def test_cost_budget_refuses_an_empty_price_table() -> None:
    with pytest.raises(ValidationError, match="prices"):
        CostBudget(max_usd=1, prices={})


@pytest.mark.parametrize(
    "price",
    [
        {"input_per_million": -1, "output_per_million": 1},
        {"input_per_million": 1, "output_per_million": -0.001},
    ],
)
def test_negative_prices_are_refused(price: dict[str, float]) -> None:
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        CostBudget.model_validate({"max_usd": 1, "prices": {"gpt-4o": price}})
    with pytest.raises(ValidationError):
        ModelPrice.model_validate(price)


@pytest.mark.parametrize(
    "raw",
    [
        {"max_usd": 1, "prices": {"*": {"input_per_million": 1, "output_per_million": 1}}, "x": 1},
        {
            "max_usd": 1,
            "prices": {"*": {"input_per_million": 1, "output_per_million": 1, "cached": 0.5}},
        },
    ],
)
def test_unknown_fields_are_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        CostBudget.model_validate(raw)


@pytest.mark.parametrize("field", ["max_usd", "input_per_million", "output_per_million"])
def test_nan_is_refused(field: str) -> None:
    raw: dict[str, Any] = {
        "max_usd": 1.0,
        "prices": {"*": {"input_per_million": 1.0, "output_per_million": 1.0}},
    }
    if field == "max_usd":
        raw["max_usd"] = float("nan")
    else:
        raw["prices"]["*"][field] = float("nan")
    with pytest.raises(ValidationError, match=field):
        CostBudget.model_validate(raw)


def test_missing_price_fields_are_refused() -> None:
    with pytest.raises(ValidationError, match="output_per_million"):
        ModelPrice.model_validate({"input_per_million": 1})


@pytest.mark.parametrize(
    "bad",
    [
        {
            "max_usd": float("inf"),
            "prices": {"*": {"input_per_million": 1, "output_per_million": 1}},
        },
        {"max_usd": 1, "prices": {"": {"input_per_million": 1, "output_per_million": 1}}},
    ],
)
def test_cost_budget_refuses_infinite_budgets_and_empty_model_names(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CostBudget.model_validate(bad)
