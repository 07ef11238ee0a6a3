"""Assembling a streamed chat completion: chunk lists in, `ModelReply` out (no HTTP).

The main property: for any reply, the chunks the real API would stream (rendered by the fake
server, split every way it can split them) assemble into exactly the `ModelReply` that the
same reply gives without streaming. Then the quirks of particular servers, one by one.
"""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from durable_agents.activities.openai_model import message_to_wire, reply_from_completion
from durable_agents.activities.streaming import StreamAssembler, StreamIncomplete, assemble_stream
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import PROGRESS_TAIL_CHARS
from durable_agents.contracts.usage import TokenUsage
from durable_agents.testing import fake_openai as fake

PROMPT = [ChatMessage.system("Be brief."), ChatMessage.user("What is 6 times 7?")]
REQUEST = {"model": "m-1", "stream": True, "stream_options": {"include_usage": True}}

REPLIES: dict[str, fake.Completion] = {
    "text": fake.text("The answer is 42, as six times seven always was."),
    "empty text": fake.text(""),
    "unicode": fake.text("答案是 42 🎉 — façade"),
    "one call": fake.tool_calls(fake.call("calculator", {"expression": "6 * 7"}, id="c1")),
    "three calls with text": fake.tool_calls(
        fake.call("calculator", {"expression": "6 * 7"}, id="c1"),
        fake.call("current_time", {}, id="c2"),
        fake.call("read_file", {"path": "notes/a very long file name.txt"}, id="c3"),
        content="Let me check.",
    ),
    "empty arguments": fake.tool_calls(fake.call("current_time", "", id="c1")),
    "malformed arguments": fake.tool_calls(fake.call("calculator", '{"expression": "6 *', id="c1")),
    "reasoning_content": fake.text("42", reasoning_content="6 * 7 = 42, simple."),
    "reasoning": fake.Completion(
        content="42", reasoning_content="six sevens", reasoning_key="reasoning"
    ),
    "reasoning and a call": fake.Completion(
        tool_calls=(fake.call("calculator", {"expression": "6*7"}, id="c9"),),
        reasoning_content="use the tool",
        reasoning_key="reasoning",
        finish_reason="tool_calls",
    ),
    "cut off": fake.text("This answer was cut of", finish_reason="length"),
    "content filter": fake.text("", finish_reason="content_filter"),
    "served model name": fake.Completion(content="hi", model="served-model-2024"),
}


def chunk(data: dict[str, Any]) -> ChatCompletionChunk:
    """A chunk as the `openai` client builds it from a stream (leniently, like the client)."""
    return ChatCompletionChunk.construct(**data)


def stream_of(streamed: fake.StreamedReply, request: dict[str, Any] = REQUEST) -> list[Any]:
    return [chunk(c) for c in fake.FakeOpenAIServer()._stream_chunks(streamed, request)]


def plain_reply(reply: fake.Completion) -> Any:
    body = fake.FakeOpenAIServer()._completion_json(reply, {"model": "m-1"})
    return reply_from_completion(ChatCompletion.model_validate(body), "fallback", PROMPT)


@pytest.mark.parametrize("name", sorted(REPLIES))
@pytest.mark.parametrize(
    "options",
    [
        {"piece_chars": 1},
        {"piece_chars": 3, "split_call_header": True},
        {"piece_chars": 5, "interleave": True},
        {"piece_chars": 2, "split_call_header": True, "interleave": True},
        {"piece_chars": 10_000},
    ],
    ids=["1 char", "3 chars, id then name", "5 chars interleaved", "2 chars, both", "whole"],
)
def test_a_stream_assembles_into_the_plain_reply(name: str, options: dict[str, Any]) -> None:
    reply = REPLIES[name]
    chunks = stream_of(fake.streamed(reply, **options))

    assembled = assemble_stream(chunks, "fallback", PROMPT)

    assert assembled == plain_reply(reply)
    assert assembled.as_message() == plain_reply(reply).as_message()
    assert message_to_wire(assembled.as_message()) == message_to_wire(
        plain_reply(reply).as_message()
    )


def test_interleaved_calls_are_split_apart_by_index() -> None:
    reply = REPLIES["three calls with text"]
    chunks = stream_of(fake.streamed(reply, piece_chars=2, split_call_header=True, interleave=True))
    # The chunks really do interleave: call 0, 1 and 2 take turns.
    indexes = [
        c.choices[0].delta.tool_calls[0].index
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    ]
    assert indexes[:3] == [0, 1, 2]

    assembled = assemble_stream(chunks, "fallback")

    assert assembled.tool_calls == [
        ToolCall(id="c1", name="calculator", arguments='{"expression": "6 * 7"}'),
        ToolCall(id="c2", name="current_time", arguments="{}"),
        ToolCall(
            id="c3", name="read_file", arguments='{"path": "notes/a very long file name.txt"}'
        ),
    ]
    assert assembled.content == "Let me check."


# -- hand-written chunk lists: what particular servers send ---------------------------------------


def delta_chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> Any:
    return chunk(
        {
            "id": "chatcmpl-x",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m-1",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            **extra,
        }
    )


def usage_chunk(prompt: int, completion: int) -> Any:
    return chunk(
        {
            "id": "chatcmpl-x",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m-1",
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
    )


def call_delta(index: int | None = None, **fields: Any) -> dict[str, Any]:
    piece: dict[str, Any] = {} if index is None else {"index": index}
    return {"tool_calls": [{**piece, **fields}]}


def test_id_and_name_repeated_in_every_chunk_are_kept_once() -> None:
    chunks = [
        delta_chunk({"role": "assistant", "content": None}),
        delta_chunk(
            call_delta(0, id="c1", type="function", function={"name": "add", "arguments": '{"a":'})
        ),
        delta_chunk(
            call_delta(0, id="c1", type="function", function={"name": "add", "arguments": " 1}"})
        ),
        delta_chunk({}, "tool_calls"),
    ]

    reply = assemble_stream(chunks, "fallback")

    assert reply.tool_calls == [ToolCall(id="c1", name="add", arguments='{"a": 1}')]
    assert reply.content is None


def test_a_name_split_in_pieces_is_joined() -> None:
    chunks = [
        delta_chunk(call_delta(0, id="c1", function={"name": "current_"})),
        delta_chunk(call_delta(0, function={"name": "time", "arguments": "{}"})),
        delta_chunk({}, "tool_calls"),
    ]

    assert assemble_stream(chunks, "f").tool_calls == [
        ToolCall(id="c1", name="current_time", arguments="{}")
    ]


def test_calls_without_an_index_are_told_apart_by_id() -> None:
    chunks = [
        delta_chunk(call_delta(id="a", function={"name": "one", "arguments": "{"})),
        delta_chunk(call_delta(function={"arguments": "}"})),
        delta_chunk(call_delta(id="b", function={"name": "two", "arguments": "{}"})),
        delta_chunk({}, "tool_calls"),
    ]

    assert assemble_stream(chunks, "f").tool_calls == [
        ToolCall(id="a", name="one", arguments="{}"),
        ToolCall(id="b", name="two", arguments="{}"),
    ]


def test_calls_are_ordered_by_index_whatever_order_they_start_in() -> None:
    chunks = [
        delta_chunk(call_delta(1, id="second", function={"name": "b", "arguments": "{}"})),
        delta_chunk(call_delta(0, id="first", function={"name": "a", "arguments": "{}"})),
        delta_chunk({}, "tool_calls"),
    ]

    assert [c.id for c in assemble_stream(chunks, "f").tool_calls] == ["first", "second"]


def test_a_server_sending_both_reasoning_keys_gives_one_copy_under_the_first() -> None:
    chunks = [
        delta_chunk({"reasoning_content": "think ", "reasoning": "think "}),
        delta_chunk({"reasoning_content": "hard", "reasoning": "hard"}),
        delta_chunk({"content": "42"}, "stop"),
    ]

    reply = assemble_stream(chunks, "f")

    assert (reply.reasoning_content, reply.reasoning_key) == ("think hard", "reasoning_content")


def test_reasoning_key_reasoning_goes_back_under_reasoning() -> None:
    chunks = [delta_chunk({"reasoning": "six sevens"}), delta_chunk({"content": "42"}, "stop")]

    reply = assemble_stream(chunks, "f")
    wire = message_to_wire(reply.as_message())

    assert reply.reasoning_key == "reasoning"
    assert wire["reasoning"] == "six sevens"
    assert "reasoning_content" not in wire


def test_usage_on_every_chunk_counts_the_last() -> None:
    usage = {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}
    final = {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
    chunks = [
        delta_chunk({"content": "4"}, usage=usage),
        delta_chunk({"content": "2"}, "stop", usage=final),
    ]

    assert assemble_stream(chunks, "f").usage == TokenUsage(
        prompt_tokens=9, completion_tokens=2, total_tokens=11
    )


def test_the_usage_chunk_after_the_finish_is_read() -> None:
    chunks = [delta_chunk({"content": "42"}, "stop"), usage_chunk(20, 1)]

    usage = assemble_stream(chunks, "f").usage

    assert usage == TokenUsage(prompt_tokens=20, completion_tokens=1, total_tokens=21)
    assert not usage.estimated


def test_a_stream_without_usage_gets_an_estimate_flagged_estimated() -> None:
    chunks = [delta_chunk({"content": "It is "}), delta_chunk({"content": "42."}, "stop")]

    usage = assemble_stream(chunks, "f", PROMPT).usage

    # loop.tokens: 4 + 3 ("Be brief.") + 4 + 5 ("What is 6 times 7?"); "It is 42." is 3.
    assert usage == TokenUsage(
        prompt_tokens=16, completion_tokens=3, total_tokens=19, estimated=True
    )


def test_other_choices_are_ignored() -> None:
    chunks = [
        chunk(
            {
                "id": "x",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [
                    {"index": 1, "delta": {"content": "second"}, "finish_reason": None},
                    {"index": 0, "delta": {"content": "first"}, "finish_reason": None},
                ],
            }
        ),
        delta_chunk({}, "stop"),
    ]

    assert assemble_stream(chunks, "f").content == "first"


def test_the_model_name_falls_back_when_no_chunk_names_one() -> None:
    chunks = [
        chunk({"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "",
               "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]})
    ]  # fmt: skip

    assert assemble_stream(chunks, "asked-model").model == "asked-model"


@pytest.mark.parametrize("cut", [0, 1, 3])
def test_a_stream_that_never_finishes_is_incomplete(cut: int) -> None:
    chunks = stream_of(fake.streamed(REPLIES["text"], piece_chars=4))[:cut]

    with pytest.raises(StreamIncomplete):
        assemble_stream(chunks, "f")


# -- progress ------------------------------------------------------------------------------------


def test_progress_counts_the_text_and_keeps_its_tail() -> None:
    text = "".join(f"word{i} " for i in range(100))  # 690 characters
    assembler = StreamAssembler("m-1", attempt=2)
    for piece in stream_of(fake.streamed(text, piece_chars=7)):
        assembler.add(piece)

    progress = assembler.progress()

    assert progress.streaming and progress.model == "m-1" and progress.attempt == 2
    assert progress.chars == len(text)
    assert progress.tail == text[-PROGRESS_TAIL_CHARS:]
    assert progress.tool is None and progress.tool_calls == 0


def test_progress_names_the_tool_call_being_written() -> None:
    reply = REPLIES["three calls with text"]
    assembler = StreamAssembler("m-1")
    seen: list[str | None] = []
    for piece in stream_of(fake.streamed(reply, piece_chars=4, split_call_header=True)):
        assembler.add(piece)
        seen.append(assembler.progress().tool)

    assert [name for name in dict.fromkeys(seen) if name] == [
        "calculator",
        "current_time",
        "read_file",
    ]
    assert assembler.progress().tool_calls == 3
    assert assembler.progress().chars == len("Let me check.")


def test_progress_counts_reasoning_apart_from_the_answer() -> None:
    assembler = StreamAssembler("m-1")
    for piece in stream_of(fake.streamed(REPLIES["reasoning_content"], piece_chars=3)):
        assembler.add(piece)

    progress = assembler.progress()

    assert progress.reasoning_chars == len("6 * 7 = 42, simple.")
    assert (progress.chars, progress.tail) == (2, "42")
