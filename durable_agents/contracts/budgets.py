"""Spending limits of a run: tokens, and money through a per-model price table."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class ModelPrice(BaseModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_million: float = Field(ge=0, le=1_000_000, allow_inf_nan=False)
    output_per_million: float = Field(ge=0, le=1_000_000, allow_inf_nan=False)


class CostBudget(BaseModel):
    """Stop the run once it has cost more than `max_usd`.

    `prices` maps model names to prices; the key `*` prices any other model. A model without a
    price fails the run with a clear error rather than spending unmetered.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_usd: float = Field(gt=0, le=1_000_000_000, allow_inf_nan=False)
    prices: dict[Annotated[str, Field(min_length=1)], ModelPrice] = Field(min_length=1)
