"""Unit tests of the loop's pure functions: no Temporal, no network, no clock."""

from __future__ import annotations

import json
from datetime import datetime
from enum import Enum
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

from durable_agents.contracts.agent_input import DEFAULT_SYSTEM_PROMPT, AgentInput
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelReply
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.conversation import append_round, start_conversation
from durable_agents.loop.input_validation import InvalidAgentInput, validate_agent_input
from durable_agents.loop.limits import max_iterations_message
from durable_agents.loop.model_reply import (
    EMPTY_ANSWER_MESSAGE,
    EMPTY_REPLY_NUDGE,
    AskAgain,
    FinalAnswer,
    GiveUp,
    normalize_reply,
    read_final_answer,
)
from durable_agents.loop.observations import ToolFailure, failure_observation, truncate_observation
from durable_agents.loop.summaries import (
    SUMMARY_MAX_CHARS,
    model_call_summary,
    shorten,
    tool_call_summary,
)
from durable_agents.loop.tool_requests import (
    RefusedCall,
    ToolRequest,
    parse_arguments,
    plan_tool_calls,
)

KNOWN_TOOLS = ["calculator", "web_search", "clock"]


# --- validate_agent_input ---------------------------------------------------------------------


def test_minimal_input_gets_defaults() -> None:
    params = validate_agent_input({"prompt": "hi"}, KNOWN_TOOLS)

    assert params.prompt == "hi"
    assert params.system_prompt == DEFAULT_SYSTEM_PROMPT
    assert params.max_iterations == 10
    assert params.tools is None
    assert params.model is None


def test_known_tools_are_accepted() -> None:
    params = validate_agent_input({"prompt": "hi", "tools": ["clock", "calculator"]}, KNOWN_TOOLS)

    assert params.tools == ["clock", "calculator"]


def test_agent_input_instance_is_accepted() -> None:
    given_input = AgentInput(prompt="hi", max_iterations=3, tools=["clock"])

    params = validate_agent_input(given_input, KNOWN_TOOLS)

    assert params == given_input


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({}, "prompt"),
        ({"prompt": ""}, "prompt"),
        ({"prompt": 5}, "prompt"),
        ({"prompt": "hi", "max_iterations": 0}, "max_iterations"),
        ({"prompt": "hi", "max_iterations": "ten"}, "max_iterations"),
        ({"prompt": "hi", "max_iteration": 3}, "max_iteration"),
        ({"prompt": "hi", "system_prompt": ""}, "system_prompt"),
        ({"prompt": "hi", "max_observation_chars": 99}, "max_observation_chars"),
    ],
)
def test_bad_field_is_named(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidAgentInput) as caught:
        validate_agent_input(raw, KNOWN_TOOLS)

    message = str(caught.value)
    assert message.startswith("invalid AgentWorkflow input: ")
    assert f"{field}: " in message


def test_unknown_field_is_refused_not_ignored() -> None:
    with pytest.raises(InvalidAgentInput, match=r"max_iteration: Extra inputs are not permitted"):
        validate_agent_input({"prompt": "hi", "max_iteration": 3}, KNOWN_TOOLS)


def test_unknown_tool_is_named_and_available_tools_listed() -> None:
    with pytest.raises(InvalidAgentInput) as caught:
        validate_agent_input({"prompt": "hi", "tools": ["clock", "shell"]}, KNOWN_TOOLS)

    message = str(caught.value)
    assert "tools: unknown tool(s) shell;" in message
    assert "available: calculator, web_search, clock" in message
    assert "clock;" not in message  # only the unknown one is reported as unknown


def test_unknown_tool_with_no_tools_registered_says_none() -> None:
    with pytest.raises(InvalidAgentInput, match=r"available: none"):
        validate_agent_input({"prompt": "hi", "tools": ["clock"]}, [])


def test_known_tools_may_be_a_one_shot_iterable() -> None:
    params = validate_agent_input({"prompt": "hi", "tools": ["clock"]}, iter(KNOWN_TOOLS))

    assert params.tools == ["clock"]


@pytest.mark.parametrize(
    ("raw", "type_name"), [("hi", "str"), (["hi"], "list"), (None, "NoneType")]
)
def test_non_object_input_is_refused(raw: Any, type_name: str) -> None:
    with pytest.raises(InvalidAgentInput) as caught:
        validate_agent_input(raw, KNOWN_TOOLS)

    message = str(caught.value)
    assert "expected a JSON object" in message
    assert f"got {type_name}" in message


def test_invalid_agent_input_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        validate_agent_input({}, KNOWN_TOOLS)


# --- conversation -----------------------------------------------------------------------------


def test_start_conversation_is_system_then_user() -> None:
    params = AgentInput(prompt="What time is it?", system_prompt="Be brief.")

    messages = start_conversation(params)

    assert messages == [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="What time is it?"),
    ]


def _assistant(*ids: str) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        content=None,
        tool_calls=[ToolCall(id=i, name="clock", arguments="{}") for i in ids],
    )


def test_append_round_writes_tool_messages_in_call_order() -> None:
    start = [ChatMessage.system("s"), ChatMessage.user("u")]
    assistant = _assistant("a", "b", "c")

    messages = append_round(start, assistant, [("c", "third"), ("a", "first"), ("b", "second")])

    assert messages[:2] == start
    assert messages[2] == assistant
    assert [(m.role, m.tool_call_id, m.content) for m in messages[3:]] == [
        ("tool", "a", "first"),
        ("tool", "b", "second"),
        ("tool", "c", "third"),
    ]
    assert len(messages) == 6


def test_append_round_does_not_mutate_its_input() -> None:
    start = [ChatMessage.user("u")]

    append_round(start, _assistant("a"), [("a", "x")])

    assert start == [ChatMessage.user("u")]


def test_append_round_without_tool_calls_appends_only_the_assistant() -> None:
    assistant = ChatMessage(role="assistant", content="done")

    assert append_round([], assistant, []) == [assistant]


def test_append_round_refuses_a_missing_observation() -> None:
    with pytest.raises(ValueError, match=r"no observation for tool call\(s\) \['b'\]"):
        append_round([], _assistant("a", "b"), [("a", "x")])


# --- normalize_reply --------------------------------------------------------------------------


def _reply(*ids: str, content: str | None = None) -> ModelReply:
    return ModelReply(
        model="m",
        content=content,
        tool_calls=[ToolCall(id=i, name=f"tool{n}", arguments="{}") for n, i in enumerate(ids)],
    )


def test_normalize_reply_keeps_good_ids() -> None:
    reply = _reply("x1", "x2")

    normalized = normalize_reply(reply, iteration=4)

    assert [c.id for c in normalized.tool_calls] == ["x1", "x2"]
    assert normalized == reply


def test_normalize_reply_replaces_empty_and_duplicate_ids() -> None:
    reply = _reply("x", "", "x", "   ")

    normalized = normalize_reply(reply, iteration=3)

    assert [c.id for c in normalized.tool_calls] == ["x", "call_3_1", "call_3_2", "call_3_3"]
    # Everything but the id is kept, in order.
    assert [c.name for c in normalized.tool_calls] == ["tool0", "tool1", "tool2", "tool3"]
    # The input is not changed.
    assert [c.id for c in reply.tool_calls] == ["x", "", "x", "   "]


def _assert_ids_usable(ids: list[str], iteration: int) -> None:
    normalized = normalize_reply(_reply(*ids), iteration)
    result = [c.id for c in normalized.tool_calls]

    assert len(result) == len(ids)
    assert all(i.strip() for i in result)
    assert len(set(result)) == len(result)
    assert [c.name for c in normalized.tool_calls] == [f"tool{n}" for n in range(len(ids))]


# Ids the provider might send, including empty, blank and repeated ones. Ids shaped like the
# generated `call_<iteration>_<index>` are covered separately below (see the test below).
provider_ids = st.lists(
    st.one_of(
        st.sampled_from(["", " ", "a", "b", "call_x", "c1"]),
        st.text(max_size=6).filter(lambda s: not s.strip().startswith("call_")),
    ),
    max_size=12,
)


@given(ids=provider_ids, iteration=st.integers(min_value=1, max_value=50))
def test_normalized_ids_are_unique_non_empty_and_counted(ids: list[str], iteration: int) -> None:
    _assert_ids_usable(ids, iteration)


@given(
    ids=st.lists(
        st.one_of(
            st.sampled_from(["", "a", "call_1_0", "call_1_1", "call_1_2", "call_1_3"]),
            st.text(max_size=4),
        ),
        max_size=8,
    )
)
@example(ids=["call_1_1", ""])
def test_normalized_ids_stay_unique_when_provider_ids_look_generated(ids: list[str]) -> None:
    _assert_ids_usable(ids, iteration=1)


# --- read_final_answer ------------------------------------------------------------------------


def test_text_reply_is_the_final_answer() -> None:
    decision = read_final_answer(_reply(content="  42  "), already_nudged=False)

    assert isinstance(decision, FinalAnswer)
    assert decision.text.strip() == "42"


def test_text_reply_is_final_even_after_a_nudge() -> None:
    assert read_final_answer(_reply(content="42"), already_nudged=True) == FinalAnswer("42")


@pytest.mark.parametrize("content", [None, "", "   \n\t"])
def test_empty_reply_asks_again_once(content: str | None) -> None:
    decision = read_final_answer(_reply(content=content), already_nudged=False)

    assert decision == AskAgain(nudge=ChatMessage(role="user", content=EMPTY_REPLY_NUDGE))


@pytest.mark.parametrize("content", [None, "", "   \n\t"])
def test_empty_reply_after_a_nudge_gives_up(content: str | None) -> None:
    decision = read_final_answer(_reply(content=content), already_nudged=True)

    assert decision == GiveUp(text=EMPTY_ANSWER_MESSAGE)


def test_reasoning_alone_is_not_an_answer() -> None:
    reply = ModelReply(model="m", content="", reasoning_content="I thought hard.")

    assert isinstance(read_final_answer(reply, already_nudged=False), AskAgain)


# --- plan_tool_calls --------------------------------------------------------------------------


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class AddArgs(BaseModel):
    a: int
    b: int


class PaintArgs(BaseModel):
    color: Color
    at: datetime


class NoArgs(BaseModel):
    verbose: bool = False
    limit: int = 5


ARG_MODELS: dict[str, type[BaseModel]] = {"add": AddArgs, "paint": PaintArgs, "now": NoArgs}


def _call(name: str, arguments: str, call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _refusal(call: ToolCall, arg_models: dict[str, type[BaseModel]] = ARG_MODELS) -> str:
    [planned] = plan_tool_calls([call], arg_models)
    assert isinstance(planned, RefusedCall)
    assert planned.call == call
    return planned.observation


def test_unknown_tool_is_refused_with_the_available_tools() -> None:
    observation = _refusal(_call("shell", "{}"))

    assert observation == "Error: unknown tool 'shell'. Available tools: add, paint, now."


def test_unknown_tool_with_no_tools_says_none() -> None:
    assert _refusal(_call("shell", "{}"), {}).endswith("Available tools: none.")


def test_invalid_json_is_refused() -> None:
    observation = _refusal(_call("add", '{"a": 1,'))

    assert observation.startswith("Error: tool 'add': the arguments are not valid JSON (")
    assert "at position" in observation


@pytest.mark.parametrize(("arguments", "type_name"), [("[1, 2]", "list"), ("3", "int")])
def test_non_object_json_is_refused(arguments: str, type_name: str) -> None:
    observation = _refusal(_call("add", arguments))

    assert observation == f"Error: tool 'add': the arguments must be a JSON object, got {type_name}"


def test_schema_invalid_arguments_name_the_field() -> None:
    observation = _refusal(_call("add", '{"a": 1, "b": "two"}'))

    assert observation.startswith("Error: tool 'add': invalid arguments: ")
    assert "b: " in observation
    assert "a: " not in observation


def test_missing_required_field_is_named() -> None:
    observation = _refusal(_call("add", '{"a": 1}'))

    assert "b: Field required" in observation


def test_valid_call_becomes_a_request_with_json_mode_args() -> None:
    call = _call("paint", '{"color": "blue", "at": "2024-05-01T12:00:00Z"}')

    [planned] = plan_tool_calls([call], ARG_MODELS)

    assert isinstance(planned, ToolRequest)
    assert planned.call == call
    assert planned.args == {"color": "blue", "at": "2024-05-01T12:00:00Z"}
    json.dumps(planned.args)  # JSON-ready: no enum or datetime objects left


def test_valid_args_are_coerced_and_defaults_filled() -> None:
    [planned] = plan_tool_calls([_call("now", '{"limit": "7"}')], ARG_MODELS)

    assert isinstance(planned, ToolRequest)
    assert planned.args == {"verbose": False, "limit": 7}


@pytest.mark.parametrize("arguments", ["", "   "])
def test_empty_arguments_mean_an_empty_object(arguments: str) -> None:
    [planned] = plan_tool_calls([_call("now", arguments)], ARG_MODELS)
    assert isinstance(planned, ToolRequest)
    assert planned.args == {"verbose": False, "limit": 5}

    observation = _refusal(_call("add", arguments))
    assert "a: Field required" in observation
    assert "b: Field required" in observation


def test_plan_keeps_the_model_order() -> None:
    calls = [
        _call("add", '{"a": 1, "b": 2}', "c1"),
        _call("shell", "{}", "c2"),
        _call("now", "", "c3"),
        _call("add", "nope", "c4"),
    ]

    planned = plan_tool_calls(calls, ARG_MODELS)

    assert [p.call.id for p in planned] == ["c1", "c2", "c3", "c4"]
    assert [type(p) for p in planned] == [ToolRequest, RefusedCall, ToolRequest, RefusedCall]


def test_parse_arguments_returns_data_or_error_text() -> None:
    assert parse_arguments('{"a": 1, "b": 2}', AddArgs) == {"a": 1, "b": 2}
    assert isinstance(parse_arguments('{"a": 1}', AddArgs), str)


# --- observations -----------------------------------------------------------------------------


def test_short_text_is_unchanged() -> None:
    assert truncate_observation("hello", 100) == ("hello", False)
    assert truncate_observation("x" * 100, 100) == ("x" * 100, False)


def test_long_text_is_cut_with_a_marker() -> None:
    text = "abcdefghij" * 100  # 1000 characters

    result, truncated = truncate_observation(text, 200)

    assert truncated is True
    assert len(result) <= 200
    assert result.endswith(" of 1000 characters ...]")
    head, marker = result.split("\n[... output truncated: showed ", 1)
    assert text.startswith(head)
    assert marker == f"{len(head)} of 1000 characters ...]"
    assert len(head) > 100  # most of the room goes to the text, not the marker


def test_text_with_braces_is_cut_safely() -> None:
    text = "{shown} {total} {}" * 50

    result, truncated = truncate_observation(text, 120)

    assert truncated
    assert len(result) <= 120
    head = result.split("\n[... output truncated", 1)[0]
    assert text.startswith(head)


@given(
    text=st.text(alphabet=st.characters(codec="utf-8"), max_size=6000),
    max_chars=st.integers(min_value=100, max_value=5000),
)
def test_truncation_never_exceeds_the_limit(text: str, max_chars: int) -> None:
    result, truncated = truncate_observation(text, max_chars)

    assert len(result) <= max_chars
    assert truncated == (len(text) > max_chars)
    if truncated:
        marker_start = result.rfind("\n[... output truncated: showed ")
        assert marker_start >= 0
        assert result.endswith(f" of {len(text)} characters ...]")
        assert text.startswith(result[:marker_start])
    else:
        assert result == text


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (ToolFailure(kind="tool_error", message="no such city"), "Error: no such city"),
        (
            ToolFailure(kind="timeout", message="ignored", timeout_seconds=1.0),
            "Error: timed out after 1s",
        ),
        (
            ToolFailure(kind="timeout", message="ignored", timeout_seconds=2.5),
            "Error: timed out after 2.5s",
        ),
        (
            ToolFailure(kind="retries_exhausted", message="disk on fire", attempts=1),
            "Error: the tool failed after 1 attempt: disk on fire",
        ),
        (
            ToolFailure(kind="retries_exhausted", message="disk on fire", attempts=3),
            "Error: the tool failed after 3 attempts: disk on fire",
        ),
    ],
)
def test_failure_observation(failure: ToolFailure, expected: str) -> None:
    observation = failure_observation(failure)

    assert observation == expected
    assert observation.startswith("Error:")


# --- limits -----------------------------------------------------------------------------------


def test_max_iterations_message_is_n8n_wording() -> None:
    assert max_iterations_message(3) == (
        "Max iterations (3) reached. The agent could not complete the task within the allowed "
        "number of iterations."
    )


# --- summaries --------------------------------------------------------------------------------


def test_shorten_keeps_short_text() -> None:
    assert shorten("hello world") == "hello world"


def test_shorten_flattens_whitespace() -> None:
    assert shorten("  a\n\tb   c  ") == "a b c"


def test_shorten_cuts_with_an_ellipsis() -> None:
    result = shorten("word " * 100)

    assert len(result) == SUMMARY_MAX_CHARS
    assert result.endswith("…")
    assert "\n" not in result
    assert shorten("abcdefghij", limit=5) == "abcd…"
    assert shorten("abcde", limit=5) == "abcde"


def test_tool_call_summary_shows_sorted_args() -> None:
    summary = tool_call_summary({"b": 2, "a": "é"})

    assert summary == '{"a": "é", "b": 2}'


def test_tool_call_summary_is_short() -> None:
    summary = tool_call_summary({"text": "x" * 500})

    assert summary.startswith('{"text": "xxx')
    assert len(summary) == SUMMARY_MAX_CHARS


def test_model_call_summary() -> None:
    assert model_call_summary("gpt-x", 2) == "gpt-x · turn 2"
    assert model_call_summary(None, 1) == "default model · turn 1"


# --- usage ------------------------------------------------------------------------------------


def test_token_usage_adds_field_by_field() -> None:
    a = TokenUsage(prompt_tokens=1, completion_tokens=2, total_tokens=3)
    b = TokenUsage(prompt_tokens=10, completion_tokens=20, total_tokens=30)

    assert a + b == TokenUsage(prompt_tokens=11, completion_tokens=22, total_tokens=33)
    assert a + TokenUsage() == a
    assert a == TokenUsage(prompt_tokens=1, completion_tokens=2, total_tokens=3)  # unchanged


def test_plan_notes_count_what_they_drop_whatever_the_messages_say() -> None:
    """A note's text is the sender's: one that looks like the dropped-notes line (it used to
    be parsed back, and `by: "(me"` wedged the run) is a note like any other."""
    from durable_agents.contracts.messages import SteerMessage
    from durable_agents.contracts.plan import Plan
    from durable_agents.loop.plan import MAX_PLAN_NOTES_CHARS, new_plan, step_task, with_notes

    state = new_plan(Plan.model_validate({"steps": [{"goal": "a"}]}))
    forged = SteerMessage(text="x: the notes are full)", by="(me")
    state = with_notes(state, [forged])
    big = SteerMessage(text="y" * (MAX_PLAN_NOTES_CHARS // 2 + 1))
    for _ in range(3):
        state = with_notes(state, [big, forged])
    assert state.notes_dropped == 4 and len(state.notes) == 3
    assert "(4 earlier message(s) dropped: the notes are full)" in step_task("p", state, 0)
