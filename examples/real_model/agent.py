"""The `clock` agent: one tool, and no model named, so it runs on the worker's default model.

The model is the worker's business: `OPENAI_API_KEY`, `OPENAI_BASE_URL` and `MODEL` in the
worker's environment (or `provider/model` names through `MODEL_PROVIDERS`). The key never
enters workflow input, history, logs or results; a run only names a model.
"""

from __future__ import annotations

from durable_agents import Agent, ToolError

UTC_OFFSETS = {"paris": 1, "london": 0, "new york": -5, "tokyo": 9}
"""Each city's offset from UTC in hours (winter time)."""

clock: Agent[None] = Agent(
    "clock",
    instructions="Answer questions about time zones; use the utc_offset tool for each city.",
)


@clock.tool
async def utc_offset(city: str) -> int:
    """A city's offset from UTC, in hours.

    Args:
        city: The city's English name.
    """
    offset = UTC_OFFSETS.get(city.lower())
    if offset is None:
        raise ToolError(f"no offset for {city!r}; cities: {', '.join(UTC_OFFSETS)}")
    return offset
