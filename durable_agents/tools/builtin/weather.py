"""The `weather` tool: the current weather for a city, from an HTTP weather service.

A demo of a tool whose service fails and recovers (seed 003's evaluation case): a server error
(5xx) or a rate limit (429) is a `TransientToolError`, retried with backoff by Temporal (the same
call, the same idempotency key); a city the service does not know is a `ToolError` the model
reads at once. The service is `WEATHER_URL` on the worker (`GET <url>/now?city=...` answering
JSON); without it the tool answers an error naming the variable. This repository's worker starts
a demo service with made-up weather that fails the first request of each call on purpose
(`examples/weather_service.py`, not part of the installed package).
"""

from __future__ import annotations

import os
from datetime import timedelta

import httpx
from pydantic import BaseModel, Field

from durable_agents.tools.definition import ToolContext, ToolError, TransientToolError, tool


class WeatherArgs(BaseModel):
    """Arguments of the `weather` tool."""

    city: str = Field(min_length=1, max_length=100, description="City name, e.g. Paris")


def describe(report: dict[str, object]) -> str:
    """`Paris: sunny, 21 °C` (and `(demo data)` when the service made it up)."""
    text = f"{report.get('city')}: {report.get('conditions')}, {report.get('temperature_c')} °C"
    return f"{text} (demo data)" if report.get("demo") else text


@tool(start_to_close_timeout=timedelta(seconds=10))
async def weather(args: WeatherArgs, ctx: ToolContext) -> str:
    """Current weather for a city, from the worker's weather service (WEATHER_URL)."""
    base = os.environ.get("WEATHER_URL")
    if not base:
        raise ToolError("no weather service: the worker has no WEATHER_URL")
    async with httpx.AsyncClient(timeout=5.0) as http:
        response = await http.get(
            f"{base.rstrip('/')}/now",
            params={"city": args.city},
            headers={"Idempotency-Key": ctx.idempotency_key},
        )
    if response.status_code == 429 or response.status_code >= 500:
        raise TransientToolError(f"the weather service answered {response.status_code}")
    if response.status_code == 404:
        raise ToolError(f"the weather service does not know {args.city!r}")
    if response.status_code != 200:
        raise ToolError(f"the weather service answered {response.status_code}")
    try:
        report = response.json()
    except ValueError:
        raise TransientToolError(
            "the weather service answered something that is not JSON"
        ) from None
    return describe(report)
