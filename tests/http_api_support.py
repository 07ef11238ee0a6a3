"""`agent serve` for tests: the real FastAPI application served by uvicorn on a free port of
127.0.0.1, in the test's event loop, around the test worker's Temporal client; and a reader of
server-sent events over real HTTP (httpx)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn

from durable_agents.runtime.web_ui import WebUiLink
from durable_agents.servers.auth.authenticator import Authenticator
from durable_agents.servers.http_api.app import create_app
from durable_agents.servers.http_api.config import ServeConfig
from durable_agents.servers.http_serving import SHUTDOWN_GRACE_SECONDS
from testkit.eventually import eventually
from tests.conftest import AgentHarness

TOKEN = "test-token-0123456789-SECRET-never-in-history"
ORIGIN = "http://console.example"


@dataclass
class LiveApi:
    """A running `agent serve` and an HTTP client that sends its token."""

    url: str
    http: httpx.AsyncClient
    server: uvicorn.Server
    app: Any


@contextlib.asynccontextmanager
async def live_api(
    agent: AgentHarness, token: str | None = TOKEN, **overrides: Any
) -> AsyncIterator[LiveApi]:
    """`agent serve` taking `token` as `AGENT_API_TOKEN` (None: no credentials, loopback), or
    the `authenticator` given."""
    settings: dict[str, Any] = {
        "authenticator": Authenticator(api_token=token) if token else None,
        "task_queue": agent.task_queue,
        "cors_origins": (ORIGIN,),
        "max_body_bytes": 256 * 1024,
        "web_ui": WebUiLink(configured="http://localhost:8233"),
    }
    config = ServeConfig(**{**settings, **overrides})
    app = create_app(agent.client, config)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=0,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
    )
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started, what="uvicorn to listen")
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
            yield LiveApi(url, http, server, app)
    finally:
        server.should_exit = True
        await task


@dataclass
class SseEvent:
    id: str | None
    event: str | None
    data: Any


async def sse_events(
    http: httpx.AsyncClient,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    limit: int = 10_000,
) -> AsyncIterator[SseEvent]:
    """The server-sent events of `path` as they arrive (comments and pings skipped)."""
    async with http.stream("GET", path, headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        fields: dict[str, str] = {}
        data: list[str] = []
        count = 0
        async for line in response.aiter_lines():
            if line == "":
                if data:
                    yield SseEvent(
                        fields.get("id"), fields.get("event"), json.loads("\n".join(data))
                    )
                    count += 1
                    if count >= limit:
                        return
                fields, data = {}, []
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            else:
                fields[name] = value


async def collect(http: httpx.AsyncClient, path: str, **options: Any) -> list[SseEvent]:
    """Every event of `path` until the server ends the stream (or `limit` of them)."""
    return [event async for event in sse_events(http, path, **options)]
