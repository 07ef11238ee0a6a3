"""`OpenAIChatModel` over real HTTP against the fake server: streaming (SSE) and its fallback,
reasoning keys, missing usage, `parallel_tool_calls`, and `MODEL_STREAMING`.

The real `openai` client talks to `testkit/fake_openai.py`; nothing is mocked. A model object
talks to one endpoint, so what it remembers about streaming is checked on the same object.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from durable_agents.activities.openai_model import OpenAIChatModel, message_to_wire
from durable_agents.contracts.errors import MODEL_REQUEST_REJECTED, MODEL_UNAVAILABLE
from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import ModelReply, ModelRequest, ToolSchema
from durable_agents.contracts.usage import TokenUsage
from durable_agents.runtime.models import chat_model_for
from durable_agents.runtime.settings import EnvironmentSettings
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from tests.test_stream_assembly import REPLIES

KEY = "sk-stream-test-0123456789-secret"
PROMPT = [ChatMessage.system("Be brief."), ChatMessage.user("What is 6 times 7?")]
TOOLS = [
    ToolSchema(
        name="calculator",
        description="Arithmetic.",
        parameters={"type": "object", "properties": {"expression": {"type": "string"}}},
    )
]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def model_for(server: FakeOpenAIServer, *, streaming: bool = True) -> OpenAIChatModel:
    return OpenAIChatModel(
        api_key=KEY, base_url=server.base_url, default_model="m-1", streaming=streaming
    )


async def ask(model: OpenAIChatModel, **fields: Any) -> ModelReply:
    return await model.complete(ModelRequest(messages=PROMPT, **fields))


# -- streaming ---------------------------------------------------------------------------------


async def test_a_streamed_request_asks_for_usage(server: FakeOpenAIServer) -> None:
    model = model_for(server)
    server.enqueue(fake.streamed("It is 42.", piece_chars=2))

    reply = await ask(model)

    body = server.last_request.body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert reply.content == "It is 42."
    assert reply.usage == TokenUsage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
    assert server.chunks_sent > 5  # it really came in pieces
    assert model.streams_to()
    await model.close()


@pytest.mark.parametrize("name", sorted(REPLIES))
async def test_streamed_and_plain_replies_are_the_same(server: FakeOpenAIServer, name: str) -> None:
    streaming, plain = model_for(server), model_for(server, streaming=False)
    server.enqueue(
        fake.streamed(REPLIES[name], piece_chars=3, split_call_header=True, interleave=True),
        REPLIES[name],
    )

    streamed_reply = await ask(streaming, tools=TOOLS)
    plain_reply = await ask(plain, tools=TOOLS)

    first, second = server.requests
    assert first.body.get("stream") is True and "stream" not in second.body
    assert streamed_reply == plain_reply
    await streaming.close()
    await plain.close()


async def test_model_streaming_false_sends_plain_requests(server: FakeOpenAIServer) -> None:
    settings = EnvironmentSettings.from_env(
        {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url, "MODEL_STREAMING": "false"}
    )
    model = chat_model_for(settings)
    assert isinstance(model, OpenAIChatModel)
    server.enqueue("plain")

    reply = await model.complete(ModelRequest(messages=PROMPT))

    assert settings.model_streaming is False
    assert reply.content == "plain"
    assert "stream" not in server.last_request.body
    assert "stream_options" not in server.last_request.body
    await model.close()


def test_streaming_is_on_by_default() -> None:
    settings = EnvironmentSettings.from_env({"OPENAI_API_KEY": KEY})
    model = chat_model_for(settings)

    assert settings.model_streaming is True
    assert isinstance(model, OpenAIChatModel) and model.streaming


# -- a provider that does not stream -------------------------------------------------------------


async def test_a_refused_stream_falls_back_and_is_remembered(
    server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    model = model_for(server)
    server.refuse_streaming = fake.error(
        400, "Unrecognized request argument supplied: stream_options"
    )
    server.enqueue("first", "second")

    with caplog.at_level(logging.WARNING, logger="durable_agents.activities.openai_model"):
        first = await ask(model)
        second = await ask(model)

    assert (first.content, second.content) == ("first", "second")
    streamed = [r.body.get("stream") is True for r in server.requests]
    # The stream was refused once; the same call went plain; the next call did not try again.
    assert streamed == [True, False, False]
    assert not model.streams_to()
    refusals = [r for r in caplog.records if "refused streaming" in r.getMessage()]
    assert len(refusals) == 1
    assert KEY not in caplog.text
    await model.close()


async def test_a_server_that_ignores_stream_is_read_and_remembered(
    server: FakeOpenAIServer,
) -> None:
    model = model_for(server)

    def plain_json(body: dict[str, Any]) -> fake.RawReply:
        completion = server._completion_json(fake.text("no stream here"), body)
        return fake.raw(200, json.dumps(completion))

    server.set_handler(plain_json)

    first = await ask(model)
    second = await ask(model)

    assert (first.content, second.content) == ("no stream here", "no stream here")
    assert [r.body.get("stream") for r in server.requests] == [True, None]
    assert server.request_count == 2  # the ignored stream was not asked again
    await model.close()


async def test_a_stream_that_never_finishes_falls_back_to_a_plain_request(
    server: FakeOpenAIServer,
) -> None:
    model = model_for(server)
    server.enqueue(fake.streamed("never finished", finish=False), "plain answer")

    reply = await ask(model)

    assert reply.content == "plain answer"
    assert [r.body.get("stream") is True for r in server.requests] == [True, False]
    assert not model.streams_to()
    await model.close()


async def test_a_400_about_the_request_is_not_a_streaming_refusal(
    server: FakeOpenAIServer,
) -> None:
    model = model_for(server)
    server.enqueue(
        fake.error(400, "This model's maximum context length is 8192 tokens."),
        fake.streamed("fine"),
    )

    with pytest.raises(ApplicationError) as caught:
        await ask(model)
    after = await ask(model)

    assert caught.value.type == MODEL_REQUEST_REJECTED
    assert "maximum context length" in caught.value.message
    assert server.request_count == 2  # one request for the failed call: no plain retry
    assert after.content == "fine" and server.last_request.body["stream"] is True
    assert model.streams_to()
    await model.close()


async def test_a_refusal_that_also_fails_plainly_raises_the_plain_error(
    server: FakeOpenAIServer,
) -> None:
    model = model_for(server)
    server.enqueue(
        fake.error(422, "stream: extra inputs are not permitted"),
        fake.error(422, "messages: the conversation is invalid"),
    )

    with pytest.raises(ApplicationError) as caught:
        await ask(model)

    assert caught.value.non_retryable
    assert "the conversation is invalid" in caught.value.message
    assert not model.streams_to()  # the provider said streaming was the problem
    await model.close()


async def test_an_upstream_error_is_not_about_streaming(server: FakeOpenAIServer) -> None:
    model = model_for(server)
    server.enqueue(fake.error(403, "upstream refused this key"))

    with pytest.raises(ApplicationError):
        await ask(model)

    assert server.request_count == 1
    assert model.streams_to()
    await model.close()


async def test_a_connection_dropped_mid_stream_is_retryable_and_keeps_nothing(
    server: FakeOpenAIServer,
) -> None:
    model = model_for(server)
    server.enqueue(fake.streamed("half of this never arrives", piece_chars=3, drop_after=4))

    with pytest.raises(ApplicationError) as caught:
        await ask(model)

    assert caught.value.type == MODEL_UNAVAILABLE
    assert not caught.value.non_retryable  # Temporal retries the whole call
    assert server.request_count == 1  # no plain request: a transport failure, not a refusal
    assert model.streams_to()
    await model.close()


async def test_an_error_event_mid_stream_is_retryable(server: FakeOpenAIServer) -> None:
    model = model_for(server)
    chunk = server._stream_chunks(fake.streamed("abc"), {"model": "m-1"})[0]
    body = (
        f"data: {json.dumps(chunk)}\n\n"
        'data: {"error": {"message": "overloaded, try again", "type": "server_error"}}\n\n'
    )
    server.enqueue(fake.raw(200, body, {"Content-Type": "text/event-stream"}))

    with pytest.raises(ApplicationError) as caught:
        await ask(model)

    assert caught.value.type == MODEL_UNAVAILABLE and not caught.value.non_retryable
    assert "overloaded" in caught.value.message
    await model.close()


# -- provider differences ------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "plain"])
@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
async def test_reasoning_goes_back_under_the_key_it_came_in(
    server: FakeOpenAIServer, key: str, streaming: bool
) -> None:
    model = model_for(server, streaming=streaming)
    server.enqueue(
        fake.Completion(
            tool_calls=(fake.call("calculator", {"expression": "6*7"}, id="c1"),),
            reasoning_content="I should use the calculator.",
            reasoning_key=key,
            finish_reason="tool_calls",
        ),
        "42",
    )

    reply = await ask(model, tools=TOOLS)
    conversation = [*PROMPT, reply.as_message(), ChatMessage.tool_result("c1", "42")]
    await model.complete(ModelRequest(messages=conversation, tools=TOOLS))

    assert (reply.reasoning_content, reply.reasoning_key) == ("I should use the calculator.", key)
    sent_back = server.last_request.messages[2]
    other = "reasoning" if key == "reasoning_content" else "reasoning_content"
    assert sent_back[key] == "I should use the calculator."
    assert other not in sent_back
    await model.close()


def test_reasoning_without_a_key_goes_back_as_reasoning_content() -> None:
    message = ChatMessage(role="assistant", content="42", reasoning_content="think")

    assert message_to_wire(message)["reasoning_content"] == "think"
    assert "reasoning_key" not in message.model_dump_json()


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "plain"])
async def test_a_reply_without_usage_is_estimated_and_flagged(
    server: FakeOpenAIServer, streaming: bool
) -> None:
    model = model_for(server, streaming=streaming)
    server.enqueue(fake.Completion(content="It is 42.", usage=None))

    reply = await ask(model)

    # loop.tokens: 4 + 3 ("Be brief.") + 4 + 5 ("What is 6 times 7?"); "It is 42." is 3.
    assert reply.usage == TokenUsage(
        prompt_tokens=16, completion_tokens=3, total_tokens=19, estimated=True
    )
    assert '"estimated":true' in reply.model_dump_json()
    await model.close()


def test_estimated_usage_stays_flagged_when_summed() -> None:
    exact = TokenUsage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
    estimated = TokenUsage(prompt_tokens=1, completion_tokens=1, total_tokens=2, estimated=True)

    assert (exact + estimated).estimated and (estimated + exact).estimated
    assert (exact + estimated).total_tokens == 17
    assert not (exact + exact).estimated
    assert "estimated" not in (exact + exact).model_dump_json()


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "plain"])
@pytest.mark.parametrize("parallel", [True, False])
async def test_parallel_tool_calls_is_passed_with_tools(
    server: FakeOpenAIServer, parallel: bool, streaming: bool
) -> None:
    model = model_for(server, streaming=streaming)
    server.enqueue("a", "b", "c")

    await ask(model, tools=TOOLS, parallel_tool_calls=parallel)
    with_tools = server.last_request.body
    await ask(model, parallel_tool_calls=parallel)  # no tools offered: not sent
    without_tools = server.last_request.body
    await ask(model, tools=TOOLS)  # unset: the provider's default
    unset = server.last_request.body

    assert with_tools["parallel_tool_calls"] is parallel
    assert "parallel_tool_calls" not in without_tools
    assert "parallel_tool_calls" not in unset
    await model.close()


async def test_finish_reason_passes_through(server: FakeOpenAIServer) -> None:
    model = model_for(server)
    server.enqueue(
        fake.streamed(fake.text("cut of", finish_reason="length")),
        fake.streamed(fake.text("", finish_reason="content_filter")),
    )

    assert (await ask(model)).finish_reason == "length"
    assert (await ask(model)).finish_reason == "content_filter"
    await model.close()


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "plain"])
async def test_response_format_is_passed_through(server: FakeOpenAIServer, streaming: bool) -> None:
    model = model_for(server, streaming=streaming)
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "answer", "strict": True, "schema": {"type": "object"}},
    }
    server.enqueue('{"value": 42}', "plain")

    reply = await ask(model, response_format=response_format)
    await ask(model)

    first, second = server.requests
    assert first.body["response_format"] == response_format
    assert "response_format" not in second.body
    assert reply.content == '{"value": 42}'
    await model.close()
