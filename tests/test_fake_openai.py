"""Proves ``durable_agents.testing.fake_openai`` speaks the wire format the *real* ``openai``
client expects.

Every test goes through ``openai.AsyncOpenAI`` over real HTTP, so the rest of the suite can
trust that what the fake scripts is what the client (and thus our agent loop) sees.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest

from durable_agents.testing.fake_openai import (
    STREAM_NOT_SUPPORTED,
    FakeOpenAIServer,
    call,
    delay,
    drop,
    error,
    hold,
    raw,
    text,
    tool_calls,
)
from testkit.eventually import eventually

USER_MSG: list[Any] = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """A fresh fake server per test, stopped (and its threads joined) afterwards."""
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
async def client(server: FakeOpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    """The real async client, without retries so each scripted reply maps to one call."""
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=5.0
    ) as c:
        yield c


async def _chat(client: openai.AsyncOpenAI, **kwargs: Any) -> Any:
    kwargs.setdefault("model", "gpt-test")
    kwargs.setdefault("messages", USER_MSG)
    return await client.chat.completions.create(**kwargs)


async def test_text_reply_parses(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.enqueue(text("hello there", usage=(12, 3)))
    resp = await _chat(client)
    assert resp.id.startswith("chatcmpl-")
    assert resp.object == "chat.completion"
    assert resp.model == "gpt-test"
    choice = resp.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.content == "hello there"
    assert choice.message.tool_calls is None
    assert resp.usage is not None
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (12, 3)
    assert resp.usage.total_tokens == 15


async def test_plain_str_is_text_shorthand(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue("short")
    resp = await _chat(client)
    assert resp.choices[0].message.content == "short"
    assert resp.usage.prompt_tokens == 10 and resp.usage.completion_tokens == 5


async def test_two_tool_calls_in_order(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(
        tool_calls(
            call("add", {"a": 1, "b": 2}, id="call_custom"),
            call("lookup", {"q": "x"}),
        )
    )
    resp = await _chat(client)
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = choice.message.tool_calls
    assert calls is not None and len(calls) == 2
    assert [c.id for c in calls] == ["call_custom", "call_1"]
    assert [c.type for c in calls] == ["function", "function"]
    assert [c.function.name for c in calls] == ["add", "lookup"]
    assert json.loads(calls[0].function.arguments) == {"a": 1, "b": 2}
    assert json.loads(calls[1].function.arguments) == {"q": "x"}


async def test_malformed_arguments_pass_verbatim(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    bad = '{"a": 1, "b": '
    server.enqueue(tool_calls(call("add", bad), content="thinking aloud"))
    resp = await _chat(client)
    message = resp.choices[0].message
    assert message.content == "thinking aloud"
    assert message.tool_calls[0].function.arguments == bad


async def test_reasoning_content_is_readable(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(text("answer", reasoning_content="because"))
    resp = await _chat(client)
    message = resp.choices[0].message
    assert (message.model_extra or {}).get("reasoning_content") == "because"
    assert getattr(message, "reasoning_content", None) == "because"
    # ...and absent when not set.
    server.enqueue(text("answer"))
    resp = await _chat(client)
    assert "reasoning_content" not in (resp.choices[0].message.model_extra or {})


async def test_rate_limit_error_with_retry_after(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(error(429, "slow down", headers={"Retry-After": "2"}))
    with pytest.raises(openai.RateLimitError) as info:
        await _chat(client)
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "2"
    assert "slow down" in info.value.message
    assert info.value.code == "rate_limit_exceeded"
    assert (info.value.request_id or "").startswith("req_")  # the fake's x-request-id


async def test_authentication_error_carries_message(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(error(401, "Incorrect API key provided"))
    with pytest.raises(openai.AuthenticationError) as info:
        await _chat(client)
    assert info.value.status_code == 401
    assert "Incorrect API key provided" in str(info.value)
    assert info.value.body == {
        "message": "Incorrect API key provided",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }


async def test_custom_error_body(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.enqueue(error(400, body={"error": {"message": "ctx too long", "code": "ctx"}}))
    with pytest.raises(openai.BadRequestError) as info:
        await _chat(client)
    assert info.value.code == "ctx"
    assert "ctx too long" in str(info.value)


async def test_client_retry_honours_retry_after_ms(server: FakeOpenAIServer) -> None:
    server.enqueue(error(503, headers={"retry-after-ms": "20"}), text("recovered"))
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="sk-test", max_retries=1
    ) as retrying:
        resp = await _chat(retrying)
    assert resp.choices[0].message.content == "recovered"
    assert server.request_count == 2


async def test_drop_raises_connection_error_and_server_survives(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    # The first call leaves a keep-alive connection in the pool; drop() aborts it mid-use.
    server.enqueue(text("warm up"), drop(), text("still alive"))
    await _chat(client)
    with pytest.raises(openai.APIConnectionError) as info:
        await _chat(client)
    assert not isinstance(info.value, openai.APITimeoutError)
    resp = await _chat(client)
    assert resp.choices[0].message.content == "still alive"
    assert server.request_count == 3


async def test_delay_beyond_client_timeout_raises_timeout(server: FakeOpenAIServer) -> None:
    # The timeout error itself shows the client gave up before the reply (which would only come
    # after 60 s, or never: stopping the server ends the delay).
    server.enqueue(delay(60, text("too late")))
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=0.3
    ) as impatient:
        with pytest.raises(openai.APITimeoutError):
            await _chat(impatient)
    assert server.request_count == 1
    assert server.responses_sent == 0


async def test_hold_answers_once_released(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    release = threading.Event()
    server.enqueue(hold(release, text("released")))
    answer = asyncio.create_task(_chat(client))
    await eventually(lambda: server.request_count == 1, what="the request to arrive")
    assert not answer.done() and server.responses_sent == 0  # held
    release.set()
    assert (await answer).choices[0].message.content == "released"
    # (the server counts a response after writing it: the client may have read it first)
    await eventually(lambda: server.responses_sent == 1, what="the response to be counted")


def test_stop_ends_a_hold_by_dropping_the_connection() -> None:
    srv = FakeOpenAIServer().start()
    srv.enqueue(hold(threading.Event(), "never"))
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    conn.request("POST", "/v1/chat/completions", body=json.dumps({"messages": []}))
    srv.stop()
    with pytest.raises(ConnectionError):
        conn.getresponse()
    conn.close()
    assert srv.responses_sent == 0


async def test_delay_within_timeout_answers(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(delay(0.05, "eventually"))
    resp = await _chat(client)
    assert resp.choices[0].message.content == "eventually"


async def test_requests_are_recorded(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    tools = [
        {
            "type": "function",
            "function": {"name": "add", "parameters": {"type": "object", "properties": {}}},
        }
    ]
    server.enqueue(text("one"), text("two"))
    await _chat(client, messages=[{"role": "system", "content": "be brief"}, *USER_MSG])
    await _chat(client, tools=tools, temperature=0)
    assert server.request_count == 2
    first, second = server.requests
    assert first.headers["authorization"] == "Bearer sk-test"
    assert first.headers["content-type"] == "application/json"
    assert first.body["model"] == "gpt-test"
    assert first.messages == [{"role": "system", "content": "be brief"}, *USER_MSG]
    assert first["messages"][1]["content"] == "hi"  # indexing delegates to the body
    assert second["tools"] == tools
    assert second.get("temperature") == 0
    assert server.last_request is second
    assert server.pending_replies == 0
    assert server.errors == []


async def test_handler_mode_echoes_last_tool_result(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    def handler(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return text(f"tool said: {last['content']}")
        return tool_calls(call("echo", {"x": 1}, id="call_echo"))

    server.set_handler(handler)
    first = await _chat(client)
    assert first.choices[0].message.tool_calls[0].id == "call_echo"
    messages: list[Any] = [
        *USER_MSG,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "call_echo", "content": "42"},
    ]
    second = await _chat(client, messages=messages)
    assert second.choices[0].message.content == "tool said: 42"


async def test_queue_takes_precedence_over_handler(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    server.set_handler(lambda body: text("from handler"))
    server.enqueue(text("from queue"))
    assert (await _chat(client)).choices[0].message.content == "from queue"
    assert (await _chat(client)).choices[0].message.content == "from handler"


async def test_exhausted_script_is_a_clear_500(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    with pytest.raises(openai.InternalServerError) as info:
        await _chat(client)
    assert "script exhausted" in str(info.value)
    assert info.value.code == "script_exhausted"
    assert len(server.errors) == 1


async def test_handler_exception_answers_500_and_server_survives(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    def broken(body: dict[str, Any]) -> Any:
        raise RuntimeError("boom")

    server.set_handler(broken)
    with pytest.raises(openai.InternalServerError) as info:
        await _chat(client)
    assert "boom" in str(info.value)
    assert "boom" in server.errors[0]
    server.set_handler(None)
    server.enqueue(text("fine"))
    assert (await _chat(client)).choices[0].message.content == "fine"


async def test_stream_is_refused(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    server.refuse_streaming = STREAM_NOT_SUPPORTED
    server.enqueue(text("unused"))
    with pytest.raises(openai.BadRequestError) as info:
        await _chat(client, stream=True)
    assert "streaming" in str(info.value)
    assert server.pending_replies == 1  # a refused stream request consumes nothing


async def test_raw_invalid_json_with_200(
    server: FakeOpenAIServer, client: openai.AsyncOpenAI
) -> None:
    # Worth knowing: the real client does NOT wrap this in an openai error; it surfaces
    # json.JSONDecodeError (a ValueError) straight from response parsing.
    server.enqueue(raw(200, b"{this is not json"))
    with pytest.raises(json.JSONDecodeError):
        await _chat(client)
    server.enqueue(raw(502, "<html>bad gateway</html>", {"Content-Type": "text/html"}))
    with pytest.raises(openai.InternalServerError) as info:
        await _chat(client)
    assert info.value.status_code == 502
    assert info.value.body == "<html>bad gateway</html>"


async def test_models_list(server: FakeOpenAIServer, client: openai.AsyncOpenAI) -> None:
    models = await client.models.list()
    assert "fake-model" in [m.id for m in models.data]
    assert server.request_count == 0  # only chat requests are recorded


async def test_stop_joins_threads_even_with_open_connections_and_delays() -> None:
    srv = FakeOpenAIServer().start()
    srv.enqueue(delay(30, "never"))
    # One connection stuck in a delay, one idle keep-alive connection.
    busy = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    busy.request("POST", "/v1/chat/completions", body=json.dumps({"messages": []}))
    idle = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    idle.request("GET", "/v1/models")
    assert idle.getresponse().read()
    await eventually(lambda: srv.request_count == 1, what="the delayed request to arrive")
    srv.stop()
    # stop() did not wait out the 30 s delay: it dropped the connection (its joins give up after
    # 5 s, so a delay still running would show below as a leaked thread).
    with pytest.raises(ConnectionError):
        busy.getresponse()
    srv.stop()  # idempotent
    busy.close()
    idle.close()
    leaked = [t.name for t in threading.enumerate() if t.name.startswith("fake-openai")]
    assert leaked == []
    with pytest.raises(RuntimeError):
        _ = srv.base_url
