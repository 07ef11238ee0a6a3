"""What the OpenAI-compatible model sends on the wire and how it reads a `ChatCompletion` back."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import ChatCompletion
from temporalio.exceptions import ApplicationError

from durable_agents.activities.openai_model import (
    message_to_wire,
    reply_from_completion,
    tool_to_wire,
)
from durable_agents.contracts.errors import MODEL_UNAVAILABLE
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelReply, ToolSchema
from durable_agents.contracts.usage import TokenUsage

# --- message_to_wire --------------------------------------------------------------------------


def test_system_message() -> None:
    assert message_to_wire(ChatMessage.system("Be brief.")) == {
        "role": "system",
        "content": "Be brief.",
    }


def test_user_message() -> None:
    assert message_to_wire(ChatMessage.user("hi")) == {"role": "user", "content": "hi"}


def test_assistant_text_message_has_no_tool_fields() -> None:
    wire = message_to_wire(ChatMessage(role="assistant", content="42"))

    assert wire == {"role": "assistant", "content": "42"}


def test_assistant_tool_calls() -> None:
    message = ChatMessage(
        role="assistant",
        content=None,
        tool_calls=[
            ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 2}'),
            ToolCall(id="c2", name="clock", arguments=""),
        ],
    )

    assert message_to_wire(message) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
            },
            {"id": "c2", "type": "function", "function": {"name": "clock", "arguments": ""}},
        ],
    }


def test_assistant_reasoning_is_sent_back_only_when_set() -> None:
    with_reasoning = ChatMessage(role="assistant", content="42", reasoning_content="2*21")
    empty_reasoning = ChatMessage(role="assistant", content="42", reasoning_content="")

    assert message_to_wire(with_reasoning) == {
        "role": "assistant",
        "content": "42",
        "reasoning_content": "2*21",
    }
    assert "reasoning_content" not in message_to_wire(empty_reasoning)


def test_tool_message_carries_its_call_id() -> None:
    assert message_to_wire(ChatMessage.tool_result("c1", "3")) == {
        "role": "tool",
        "content": "3",
        "tool_call_id": "c1",
    }


def test_an_empty_tool_call_id_is_still_sent() -> None:
    wire = message_to_wire(ChatMessage(role="tool", content="x", tool_call_id=""))

    assert wire["tool_call_id"] == ""


def test_a_reply_goes_back_on_the_wire_as_an_assistant_message() -> None:
    reply = ModelReply(
        model="m",
        content=None,
        tool_calls=[ToolCall(id="c1", name="add", arguments="{}")],
        reasoning_content="think",
    )

    wire = message_to_wire(reply.as_message())

    assert wire["role"] == "assistant"
    assert wire["reasoning_content"] == "think"
    assert [c["id"] for c in wire["tool_calls"]] == ["c1"]
    assert "tool_call_id" not in wire


# --- tool_to_wire -----------------------------------------------------------------------------


def test_tool_to_wire() -> None:
    parameters = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
    }
    schema = ToolSchema(name="add", description="Add numbers.", parameters=parameters)

    assert tool_to_wire(schema) == {
        "type": "function",
        "function": {"name": "add", "description": "Add numbers.", "parameters": parameters},
    }


# --- reply_from_completion --------------------------------------------------------------------


def completion(
    message: dict[str, Any] | None = None,
    *,
    finish_reason: str = "stop",
    usage: dict[str, int] | None = None,
    model: str = "served-model",
    choices: list[dict[str, Any]] | None = None,
) -> ChatCompletion:
    data: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": choices
        if choices is not None
        else [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": None, **(message or {})},
            }
        ],
    }
    if usage is not None:
        data["usage"] = usage
    return ChatCompletion.model_validate(data)


USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def test_content_only() -> None:
    reply = reply_from_completion(completion({"content": "Hello!"}, usage=USAGE), "fallback")

    assert reply == ModelReply(
        model="served-model",
        content="Hello!",
        tool_calls=[],
        finish_reason="stop",
        usage=TokenUsage(prompt_tokens=11, completion_tokens=7, total_tokens=18),
        reasoning_content=None,
    )


def test_tool_calls() -> None:
    message = {
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
            },
            {"id": "call_b", "type": "function", "function": {"name": "clock", "arguments": ""}},
        ],
    }

    reply = reply_from_completion(
        completion(message, finish_reason="tool_calls", usage=USAGE), "fallback"
    )

    assert reply.content is None
    assert reply.finish_reason == "tool_calls"
    assert reply.tool_calls == [
        ToolCall(id="call_a", name="add", arguments='{"a": 1, "b": 2}'),
        ToolCall(id="call_b", name="clock", arguments=""),
    ]


def test_empty_tool_call_id_is_kept_empty_for_normalize_reply() -> None:
    message = {
        "tool_calls": [
            {"id": "", "type": "function", "function": {"name": "clock", "arguments": "{}"}}
        ]
    }

    reply = reply_from_completion(completion(message), "fallback")

    assert reply.tool_calls == [ToolCall(id="", name="clock", arguments="{}")]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_from_extra_fields(field: str) -> None:
    reply = reply_from_completion(
        completion({"content": "42", field: "6 times 7"}, usage=USAGE), "fallback"
    )

    assert reply.reasoning_content == "6 times 7"
    assert reply.content == "42"
    assert reply.as_message().reasoning_content == "6 times 7"


def test_non_text_reasoning_is_ignored() -> None:
    reply = reply_from_completion(
        completion({"content": "42", "reasoning": {"effort": "high"}}), "fallback"
    )

    assert reply.reasoning_content is None


def test_missing_usage_is_estimated_and_flagged() -> None:
    prompt = [ChatMessage.user("What is 6 times 7?")]  # 4 + 5 estimated tokens

    reply = reply_from_completion(completion({"content": "It is 42."}), "fallback", prompt)

    assert reply.usage == TokenUsage(
        prompt_tokens=9, completion_tokens=3, total_tokens=12, estimated=True
    )


def test_reported_usage_is_not_estimated() -> None:
    reply = reply_from_completion(completion({"content": "hi"}, usage=USAGE), "fallback")

    assert reply.usage.estimated is False
    assert "estimated" not in reply.usage.model_dump_json()


def test_missing_model_name_falls_back() -> None:
    reply = reply_from_completion(completion({"content": "hi"}, model=""), "fallback")

    assert reply.model == "fallback"


def test_only_the_first_choice_is_read() -> None:
    choices = [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "one"}},
        {"index": 1, "finish_reason": "stop", "message": {"role": "assistant", "content": "two"}},
    ]

    reply = reply_from_completion(completion(choices=choices), "fallback")

    assert reply.content == "one"


def test_no_choices_is_a_retryable_model_error() -> None:
    with pytest.raises(ApplicationError) as caught:
        reply_from_completion(completion(choices=[], usage=USAGE), "fallback")

    assert caught.value.type == MODEL_UNAVAILABLE
    assert caught.value.non_retryable is False
    assert "no choices" in caught.value.message
