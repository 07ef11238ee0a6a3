"""A demo weather service for the `weather` tool (`WEATHER_URL`): a small HTTP server on
127.0.0.1 in the worker's process. This repository's worker (`worker.py`, `make run`) starts it
when `WEATHER_URL` is not set (`serve_demo_weather`); the tests start their own. A demo, so it
is not part of the installed package (issue 33).

It makes up the weather (the same for a city every time) and is flaky on purpose, the way seed
003's evaluation case wants a service to be: the first request of each call (told apart by the
`Idempotency-Key` header the tool sends, which stays the same across the call's retries) gets
`503 Service Unavailable`; the retry gets the weather. So an agent asked about the weather meets
a server error and recovers from it (`evals/seed_cases.yaml`, scenario `service_recovers`).

    GET /now?city=Paris     Idempotency-Key: <key>
    -> 503 {"error": "..."} the first time for <key>, then
    -> 200 {"city": "Paris", "conditions": "sunny", "temperature_c": 21, "demo": true}
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

CONDITIONS = ("sunny", "cloudy", "light rain", "windy", "overcast", "clear")
REMEMBERED_KEYS = 10_000
"""How many calls the service remembers having failed once (the oldest are forgotten)."""


def made_up_weather(city: str) -> dict[str, Any]:
    """The same made-up weather for a city every time (no `hash()`: it differs per process)."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(city.strip().lower()))
    return {
        "city": city.strip(),
        "conditions": CONDITIONS[seed % len(CONDITIONS)],
        "temperature_c": seed % 35 - 5,
        "demo": True,
    }


class DemoWeatherService:
    """The service: `start()` it, read `base_url`, `stop()` it. `requests` counts what it got,
    `failed` the requests it answered with 503."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self.requests = 0
        self.failed = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="demo-weather-service", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> DemoWeatherService:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def first_request_of(self, key: str) -> bool:
        """Whether this is the first request of the call `key` (and remember it)."""
        with self._lock:
            self.requests += 1
            if key in self._seen:
                return False
            self._seen[key] = None
            if len(self._seen) > REMEMBERED_KEYS:
                self._seen.popitem(last=False)
            self.failed += 1
            return True

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tool's activity logs what matters."""

            def do_GET(self) -> None:
                url = urlparse(self.path)
                city = (parse_qs(url.query).get("city") or [""])[0]
                if url.path != "/now" or not city.strip():
                    self._send(404, {"error": "ask GET /now?city=<name>"})
                elif service.first_request_of(self.headers.get("Idempotency-Key") or city):
                    self._send(
                        503,
                        {"error": "demo weather service: unavailable for the first request of "
                         "each call, on purpose (retry it)"},
                    )  # fmt: skip
                else:
                    self._send(200, made_up_weather(city))

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def serve_demo_weather() -> str:
    """`WEATHER_URL` for this process's `weather` tool: the one set, else the URL of a demo
    service started here (it runs until the process ends)."""
    if not os.environ.get("WEATHER_URL"):
        os.environ["WEATHER_URL"] = DemoWeatherService().start().base_url
    return os.environ["WEATHER_URL"]
