"""The `weather` tool and its demo service (issue 23 item 5): the service fails the first request
of each call with a 503 and answers the retry; the tool reads a 5xx as a transient failure
(retried by Temporal) and the city's weather as text. Real HTTP on 127.0.0.1, real worker and
Temporal server for the run. The demo service is the repository's (examples/), not the
package's (issue 33): without WEATHER_URL the tool says so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from durable_agents.activities.tool_activities import is_transient
from durable_agents.tools.builtin.weather import WeatherArgs, describe, weather
from durable_agents.tools.definition import ToolContext, ToolError, TransientToolError
from examples.weather_service import DemoWeatherService, made_up_weather, serve_demo_weather
from tests.conftest import ScriptedHarness
from tests.scripted_model import call, text, tool_calls
from tests.test_tool_retries import attempts_in_history


@pytest.fixture
def service() -> Iterator[DemoWeatherService]:
    running = DemoWeatherService().start()
    yield running
    running.stop()


def test_the_service_fails_each_calls_first_request_then_answers(
    service: DemoWeatherService,
) -> None:
    url = f"{service.base_url}/now"
    first = httpx.get(url, params={"city": "Paris"}, headers={"Idempotency-Key": "run/1/a"})
    again = httpx.get(url, params={"city": "Paris"}, headers={"Idempotency-Key": "run/1/a"})
    other = httpx.get(url, params={"city": "Paris"}, headers={"Idempotency-Key": "run/1/b"})

    assert (first.status_code, again.status_code, other.status_code) == (503, 200, 503)
    assert again.json() == made_up_weather("Paris")
    assert made_up_weather(" paris ")["conditions"] == made_up_weather("Paris")["conditions"]
    assert (service.requests, service.failed) == (3, 2)
    assert httpx.get(url).status_code == 404


def context(key: str) -> ToolContext:
    return ToolContext(workspace=Path("."), workflow_id="w", call_id="c", idempotency_key=key)


async def test_the_tool_raises_a_transient_error_then_returns_the_weather(
    service: DemoWeatherService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEATHER_URL", service.base_url)
    args = WeatherArgs(city="Paris")
    with pytest.raises(TransientToolError, match="answered 503") as failed:
        await weather.invoke(args, context("k1"))
    assert is_transient(failed.value)
    assert await weather.invoke(args, context("k1")) == describe(made_up_weather("Paris"))
    assert describe(made_up_weather("Paris")).endswith("(demo data)")


async def test_an_unknown_path_is_a_tool_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with DemoWeatherServiceAt() as base:
        monkeypatch.setenv("WEATHER_URL", base + "/nowhere")
        with pytest.raises(ToolError, match="does not know"):
            await weather.invoke(WeatherArgs(city="Paris"), context("k2"))


class DemoWeatherServiceAt:
    def __enter__(self) -> str:
        self.service = DemoWeatherService().start()
        return self.service.base_url

    def __exit__(self, *exc: object) -> None:
        self.service.stop()


async def test_without_weather_url_the_tool_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WEATHER_URL", raising=False)
    with pytest.raises(ToolError, match="no weather service: the worker has no WEATHER_URL"):
        await weather.invoke(WeatherArgs(city="Paris"), context("k3"))


def test_the_demo_is_started_only_without_weather_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEATHER_URL", "http://weather.example")
    assert serve_demo_weather() == "http://weather.example"
    monkeypatch.delenv("WEATHER_URL")
    url = serve_demo_weather()
    assert url.startswith("http://127.0.0.1:")
    assert httpx.get(f"{url}/now").status_code == 404  # it serves


async def test_a_run_recovers_from_the_demo_services_503(
    scripted_agent: ScriptedHarness, service: DemoWeatherService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEATHER_URL", service.base_url)
    scripted_agent.model.enqueue(
        tool_calls(call("weather", {"city": "Paris"}, id="w1")), text("It is nice.")
    )
    result, handle = await scripted_agent.run({"prompt": "weather?", "tools": ["weather"]})

    [step] = result.steps
    assert (step.status, step.observation) == ("ok", describe(made_up_weather("Paris")))
    assert await attempts_in_history(handle, "weather") == [2]  # the 503, then the retry
