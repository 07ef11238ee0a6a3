"""Provider "thinking" goes back unchanged (seed 000, issue 23 item 3): fields a provider puts on
an assistant message or a tool call that this project does not read (Gemini's thought signatures
in `extra_content`, `thinking_blocks` / `reasoning_details` from gateways serving Anthropic
models) are kept verbatim and sent back on the next call, streamed or not; each model call of
the result records the reasoning's length, and its text with `record_reasoning`.

On the wire: the real `openai` client against the fake server (`testkit/fake_openai.py`),
which records what it was sent; through a run: the real worker and Temporal server too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from durable_agents.activities.openai_model import OpenAIChatModel, message_to_wire
from durable_agents.activities.provider_fields import merge_piece
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from tests.conftest import AgentHarness
from tests.test_streaming_wire import PROMPT, TOOLS

KEY = "sk-thinking-test-0123456789-secret"
SIGNATURE = {"google": {"thought_signature": "CiQBVKhc7v1Xm+signature=="}}
THINKING = [
    {"type": "thinking", "thinking": "6 times 7 needs the calculator.", "signature": "EqQBCgIY=="}
]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def model_for(server: FakeOpenAIServer, streaming: bool) -> OpenAIChatModel:
    return OpenAIChatModel(
        api_key=KEY, base_url=server.base_url, default_model="m-1", streaming=streaming
    )


async def round_trip(server: FakeOpenAIServer, streaming: bool, reply: Any) -> dict[str, Any]:
    """Ask once (the server answers `reply`: a call of the calculator), send the reply back with
    the tool's result, and return the assistant message as the server received it."""
    model = model_for(server, streaming)
    server.enqueue(reply, "42")
    first = await model.complete(ModelRequest(messages=PROMPT, tools=TOOLS))
    [call] = first.tool_calls
    conversation = [*PROMPT, first.as_message(), ChatMessage.tool_result(call.id, "42")]
    await model.complete(ModelRequest(messages=conversation, tools=TOOLS))
    await model.close()
    assert server.last_request.get("stream") is (True if streaming else None)
    return server.last_request.messages[2]


STREAMING = pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "plain"])


@STREAMING
async def test_a_gemini_thought_signature_goes_back_on_its_tool_call(
    server: FakeOpenAIServer, streaming: bool
) -> None:
    calls = (
        fake.call("calculator", {"expression": "6*7"}, id="c1", extra={"extra_content": SIGNATURE}),
    )
    reply = fake.Completion(tool_calls=calls, finish_reason="tool_calls")

    sent_back = await round_trip(server, streaming, fake.streamed(reply) if streaming else reply)

    [wire_call] = sent_back["tool_calls"]
    assert wire_call["extra_content"] == SIGNATURE  # verbatim, on the call it came with
    assert wire_call["id"] == "c1"
    assert wire_call["function"] == {"name": "calculator", "arguments": '{"expression": "6*7"}'}
    assert "extra_content" not in sent_back  # not moved to the message


@STREAMING
async def test_thinking_blocks_on_the_message_go_back_verbatim(
    server: FakeOpenAIServer, streaming: bool
) -> None:
    """An OpenAI-compatible gateway serving an Anthropic model: the reasoning text and the
    signed thinking blocks it must get back."""
    reply = fake.Completion(
        tool_calls=(fake.call("calculator", {"expression": "6*7"}, id="c1"),),
        reasoning_content="6 times 7 needs the calculator.",
        finish_reason="tool_calls",
        message_extra={"thinking_blocks": THINKING, "provider_specific_fields": {"k": [1, 2]}},
    )
    pieces = (
        {"thinking_blocks": [{"type": "thinking", "thinking": "6 times 7 "}]},
        {"thinking_blocks": [{"type": "thinking", "thinking": "needs the calculator."}]},
        {"thinking_blocks": [{"type": "thinking", "thinking": "", "signature": "EqQBCgIY=="}]},
        {"provider_specific_fields": {"k": [1, 2]}},
    )

    sent_back = await round_trip(
        server, streaming, fake.streamed(reply, extra_pieces=pieces) if streaming else reply
    )

    assert sent_back["thinking_blocks"] == THINKING
    assert sent_back["provider_specific_fields"] == {"k": [1, 2]}
    assert sent_back["reasoning_content"] == "6 times 7 needs the calculator."
    assert sent_back["tool_calls"][0]["id"] == "c1"


async def test_streamed_reasoning_details_are_merged_by_index(server: FakeOpenAIServer) -> None:
    """OpenRouter streams `reasoning_details` entries with an `index`, repeating `type` and
    `format` in every piece; the signature comes last."""
    reply = fake.Completion(
        tool_calls=(fake.call("calculator", {"expression": "6*7"}, id="c1"),),
        finish_reason="tool_calls",
    )
    detail = {"type": "reasoning.text", "format": "anthropic-claude-v1", "index": 0}
    pieces = (
        {"reasoning_details": [{**detail, "text": "Multiply "}]},
        {"reasoning_details": [{**detail, "text": "6 by 7."}]},
        {"reasoning_details": [{**detail, "signature": "sig-1"}]},
    )
    sent_back = await round_trip(server, True, fake.streamed(reply, extra_pieces=pieces))

    assert sent_back["reasoning_details"] == [
        {**detail, "text": "Multiply 6 by 7.", "signature": "sig-1"}
    ]


def test_fields_the_project_writes_win_over_provider_fields() -> None:
    message = ChatMessage(
        role="assistant",
        content="ok",
        tool_calls=[
            ToolCall(id="c1", name="f", arguments="{}", provider_fields={"id": "x", "y": 1})
        ],
        provider_fields={"role": "tool", "content": "forged", "z": 2},
    )
    wire = message_to_wire(message)
    assert (wire["role"], wire["content"], wire["z"]) == ("assistant", "ok", 2)
    assert wire["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}, "y": 1}
    ]


def test_messages_without_provider_fields_are_unchanged_in_history() -> None:
    """No new keys in the JSON of messages and calls that carry none (what history holds)."""
    message = ChatMessage(role="assistant", tool_calls=[ToolCall(id="c", name="f", arguments="")])
    assert json.loads(message.model_dump_json()) == {
        "role": "assistant",
        "tool_calls": [{"id": "c", "name": "f", "arguments": ""}],
    }


def test_merging_pieces() -> None:
    whole: dict[str, Any] = {}
    merge_piece(whole, {"a": "x", "n": 1, "o": {"s": "p"}, "skip": None})
    merge_piece(whole, {"a": "y", "n": 2, "o": {"s": "q", "t": True}, "l": [1]})
    merge_piece(whole, {"a": "xy", "l": [2, {"type": "b", "text": "1"}]})
    merge_piece(whole, {"l": [{"type": "b", "text": "2"}, {"type": "c"}]})
    assert whole == {
        "a": "xy",  # a repeat of the whole value is not appended again
        "n": 2,
        "o": {"s": "pq", "t": True},
        "l": [1, 2, {"type": "b", "text": "12"}, {"type": "c"}],
    }


# -- through a run ---------------------------------------------------------------------------------


@pytest.mark.parametrize("record", [False, True], ids=["length only", "record_reasoning"])
async def test_a_run_sends_the_signature_back_and_records_the_reasoning(
    agent: AgentHarness, record: bool
) -> None:
    agent.fake.enqueue(
        fake.streamed(
            fake.Completion(
                tool_calls=(
                    fake.call(
                        "calculator",
                        {"expression": "6*7"},
                        id="c1",
                        extra={"extra_content": SIGNATURE},
                    ),
                ),
                reasoning_content="Use the calculator.",
                finish_reason="tool_calls",
                message_extra={"thinking_blocks": THINKING},
            )
        ),
        fake.text("It is 42."),
    )
    payload: dict[str, Any] = {"prompt": "What is 6 times 7?", "tools": ["calculator"]}
    if record:
        payload["record_reasoning"] = True
    result, _ = await agent.run(payload)

    assert result.answer == "It is 42."
    sent_back = agent.fake.requests[1].messages[2]
    assert sent_back["tool_calls"][0]["extra_content"] == SIGNATURE
    assert sent_back["thinking_blocks"] == THINKING
    assert sent_back["reasoning_content"] == "Use the calculator."
    first, second = result.model_calls
    assert (first.reasoning_chars, second.reasoning_chars) == (len("Use the calculator."), 0)
    assert first.reasoning == ("Use the calculator." if record else None)
    recorded = first.model_dump(mode="json")
    assert ("reasoning" in recorded) is record
    assert "reasoning_chars" not in second.model_dump(mode="json")  # none: left out
