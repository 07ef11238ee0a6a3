"""`make record-real`: record what the real model's server sends, once, into
`tests/fixtures/real/` (`python -m tests.real.record`).

Each fixture is one HTTP exchange with `llama-server` (`make real-model`'s build and model, named
in the file): the request body the project sends (built by `OpenAIChatModel` itself), and the
response's status, content type and body as they came (a JSON completion, or the whole
server-sent event stream). `tests/test_real_quirks.py` replays them through the fake server in
`make test`, so the everyday suite reads the real server's answers without running it.

The 503 the server answers while it loads its model is recorded by asking before `/health`
says it is ready. What this model and build do show: ids without the `call_` prefix, `content:
""` beside calls, argument pieces split over many chunks, no usage in a stream that did not ask
for it (`stream_options`), and a call written as bare JSON text that the server leaves in
`content` (`call_as_text_*`).

`python -m tests.real.record [CASE ...]` records only the cases named; with
`REAL_MODEL_BASE_URL` it asks that running server (`make real-model`) instead of starting one.

Some quirks other servers show are not produced by this model and build (ids missing or
repeated, content null or reasoning beside calls, arguments pretty-printed, as an object or not
valid JSON, `finish_reason: "stop"` with calls). Those fixtures are written here too, each
from one real recording with one named edit, and marked `"real": false` with `derived_from`
and `edit`: the rest of the body stays as the server sent it.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.tools.catalog import REGISTRY
from scripts.real_model import (
    ALIAS,
    API_KEY,
    LLAMA_PACKAGE,
    LLAMA_VERSION,
    MODEL_NAME,
    MODEL_SHA256,
    TEMPLATE,
    RealModelServer,
    ensure_all,
    server_version,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "real"
SYSTEM = "You are a helpful assistant."
SHIRTS = "How much do 17 shirts at 25 dollars each cost?"
PRODUCT = "What is 17 * 25?"
COMPACT = (",", ":")
"""JSON as llama-server writes it (no spaces)."""
TWO_SUMS = "Use the calculator for both: what is 17 * 25, and what is 120 / 4?"


def request(
    prompt: str, tools: list[str], *, stream: bool, usage: bool = True, after: str | None = None
) -> dict[str, Any]:
    """The body `OpenAIChatModel` sends for `prompt` with `tools` (streamed: as it streams;
    `usage=False`: without `stream_options`). `after`: the conversation goes on with a
    calculator call for `17 * 25` and its result `after`."""
    model = OpenAIChatModel(api_key=API_KEY, default_model=ALIAS, base_url="http://unused/v1")
    messages = [ChatMessage.system(SYSTEM), ChatMessage.user(prompt)]
    if after is not None:
        call = ToolCall(id="c1", name="calculator", arguments='{"expression": "17 * 25"}')
        messages += [
            ChatMessage(role="assistant", content=None, tool_calls=[call]),
            ChatMessage.tool_result("c1", after),
        ]
    body = model.request_kwargs(
        ModelRequest(messages=messages, tools=[tool.schema() for tool in REGISTRY.select(tools)]),
        ALIAS,
    )
    if stream:
        body["stream"] = True
        if usage:
            body["stream_options"] = {"include_usage": True}
    return body


CASES: dict[str, dict[str, Any]] = {
    # This model writes this one call as bare JSON, which the server leaves in `content`.
    "call_as_text_plain": request(PRODUCT, ["calculator"], stream=False),
    "call_as_text_streamed": request(PRODUCT, ["calculator"], stream=True),
    "tool_call_plain": request(SHIRTS, ["calculator"], stream=False),
    "tool_call_streamed": request(SHIRTS, ["calculator"], stream=True),
    "tool_call_streamed_no_usage_asked": request(SHIRTS, ["calculator"], stream=True, usage=False),
    "two_calls_plain": request(TWO_SUMS, ["calculator"], stream=False),
    "two_calls_streamed": request(TWO_SUMS, ["calculator"], stream=True),
    "text_plain": request("What is the capital of France?", ["calculator"], stream=False),
    "text_streamed": request("What is the capital of France?", ["calculator"], stream=True),
    "answer_after_tool_plain": request(SHIRTS, ["calculator"], stream=False, after="425"),
}
LOADING_CASE = "loading_model_503"


# -- the derived cases: one real recording, one named edit -------------------------------------


def plain_calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = body["choices"][0]["message"]["tool_calls"]
    return calls


def sse_events(text: str) -> list[Any]:
    """The `data:` payloads of an event stream, JSON-decoded (`[DONE]` kept as the string)."""
    events: list[Any] = []
    for line in text.splitlines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            events.append(data if data == "[DONE]" else json.loads(data))
    return events


def sse_text(events: list[Any]) -> str:
    return "".join(
        f"data: {event if isinstance(event, str) else json.dumps(event, separators=COMPACT)}\n\n"
        for event in events
    )


def without_ids(body: dict[str, Any]) -> None:
    for call in plain_calls(body):
        call.pop("id", None)


def repeated_id(body: dict[str, Any]) -> None:
    for call in plain_calls(body):
        call["id"] = plain_calls(body)[0]["id"]


def content(value: str | None) -> Callable[[dict[str, Any]], None]:
    def edit(body: dict[str, Any]) -> None:
        body["choices"][0]["message"]["content"] = value

    return edit


def pretty_arguments(body: dict[str, Any]) -> None:
    for call in plain_calls(body):
        call["function"]["arguments"] = json.dumps(
            json.loads(call["function"]["arguments"]), indent=2
        )


def object_arguments(body: dict[str, Any]) -> None:
    for call in plain_calls(body):
        call["function"]["arguments"] = json.loads(call["function"]["arguments"])


def cut_arguments(body: dict[str, Any]) -> None:
    for call in plain_calls(body):
        call["function"]["arguments"] = call["function"]["arguments"][:-1]  # the closing brace


def stream_edit(edit: Callable[[list[Any]], None]) -> Callable[[str], str]:
    def apply(text: str) -> str:
        events = sse_events(text)
        edit(events)
        return sse_text(events)

    return apply


def finish_stop(events: list[Any]) -> None:
    for event in events:
        for choice in event.get("choices", []) if isinstance(event, dict) else []:
            if choice.get("finish_reason") == "tool_calls":
                choice["finish_reason"] = "stop"


def streamed_object_arguments(events: list[Any]) -> None:
    """The argument pieces of each call joined and sent as one object in the first piece."""
    pieces: dict[int, list[str]] = {}
    first: dict[int, dict[str, Any]] = {}
    for event in events:
        for choice in event.get("choices", []) if isinstance(event, dict) else []:
            for call in choice.get("delta", {}).get("tool_calls") or []:
                function = call.get("function") or {}
                if isinstance(function.get("arguments"), str):
                    pieces.setdefault(call["index"], []).append(function["arguments"])
                    if call["index"] in first:
                        function["arguments"] = ""
                    else:
                        first[call["index"]] = function
    for index, function in first.items():
        function["arguments"] = json.loads("".join(pieces[index]))


DERIVED: dict[str, tuple[str, str, Callable[[Any], Any]]] = {
    # name: (recording it starts from, the edit as the fixture names it, the edit)
    "ids_missing_plain": ("two_calls_plain", "every tool call's id removed", without_ids),
    "ids_repeated_plain": ("two_calls_plain", "both calls given the first one's id", repeated_id),
    "content_null_plain": ("tool_call_plain", 'content "" replaced by null', content(None)),
    "content_reasoning_plain": (
        "tool_call_plain",
        "content replaced by a sentence of reasoning",
        content("I will multiply 17 by 25 with the calculator."),
    ),
    "arguments_pretty_plain": (
        "tool_call_plain",
        "arguments re-written as JSON indented over several lines",
        pretty_arguments,
    ),
    "arguments_object_plain": (
        "tool_call_plain",
        "arguments sent as a JSON object instead of a string holding one",
        object_arguments,
    ),
    "arguments_invalid_plain": (
        "tool_call_plain",
        "arguments cut before their closing brace (not valid JSON)",
        cut_arguments,
    ),
    "arguments_object_streamed": (
        "tool_call_streamed",
        "each call's argument pieces joined and sent as one JSON object in its first piece",
        stream_edit(streamed_object_arguments),
    ),
    "stop_with_tool_calls_streamed": (
        "tool_call_streamed",
        'finish_reason "tool_calls" replaced by "stop"',
        stream_edit(finish_stop),
    ),
}


def derive(name: str, source: dict[str, Any]) -> dict[str, Any]:
    """The fixture `name` of `DERIVED`, from the recorded fixture `source`."""
    origin, description, edit = DERIVED[name]
    record = copy.deepcopy(source)
    if "json" in record["content_type"]:
        body = json.loads(record["body"])
        edit(body)
        record["body"] = json.dumps(body, separators=COMPACT)
    else:
        record["body"] = edit(record["body"])
    record |= {"real": False, "derived_from": origin, "edit": description}
    return record


# -- recording ---------------------------------------------------------------------------------


def fixture(
    name: str, body: dict[str, Any], response: httpx.Response, build: str
) -> dict[str, Any]:
    record = {
        "recorded_by": "make record-real (tests/real/record.py)",
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%d"),
        "model": f"{MODEL_NAME} (sha256 {MODEL_SHA256})",
        "server": f"llama.cpp llama-server from {LLAMA_PACKAGE} {LLAMA_VERSION}, {build}",
        "template": template_name(),
        "real": True,
        "request": body,
        "status": response.status_code,
        "content_type": response.headers.get("content-type", ""),
        "body": response.text,
    }
    write(name, record)
    return record


def template_name() -> str:
    """The chat template the server ran with, and its digest (a changed template answers
    differently: record again)."""
    digest = hashlib.sha256(TEMPLATE.read_bytes()).hexdigest()
    return f"scripts/real_model/tool_calls.jinja (sha256 {digest})"


def write(name: str, record: dict[str, Any]) -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    (FIXTURES / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"{name}: {record['status']}, {len(record['body'])} characters", flush=True)


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


async def record_all(names: list[str]) -> None:
    """Record the `CASES` named (all by default), then write every derived case from the
    recordings on disk. With `REAL_MODEL_BASE_URL` set, ask that running server instead of
    starting one (the 503 of a loading model is then not recorded again)."""
    binary, _ = ensure_all()
    build = server_version(binary)
    server: RealModelServer | None = None
    base_url = os.environ.get("REAL_MODEL_BASE_URL")
    try:
        if base_url is None:
            server = RealModelServer()
            server.start_process()
            record_loading(server, build)
            server.wait_ready()
            base_url = server.base_url
        async with httpx.AsyncClient(timeout=900) as http:
            for name in names or list(CASES):
                body = CASES[name]
                response = await http.post(f"{base_url}/chat/completions", json=body)
                fixture(name, body, response, build)
    finally:
        if server is not None:
            server.stop()
    for name, (origin, _, _) in DERIVED.items():
        try:
            source = json.loads((FIXTURES / f"{origin}.json").read_text())
            write(name, derive(name, source))
        except (OSError, KeyError, IndexError, TypeError, ValueError) as error:
            print(f"{name} not written: {origin} is not the reply it edits ({error!r})")


if __name__ == "__main__":
    asyncio.run(record_all(sys.argv[1:]))
    sys.exit(0)
