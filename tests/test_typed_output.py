"""Typed answers (structured output): `output_schema` / `output_type`, the `final_result` tool and
native `response_format`, validation errors back to the model, `invalid_output`, sessions, bad
schemas refused at start. Loop logic on the scripted model, the wire over real HTTP."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from pydantic import BaseModel, Field
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.errors import INVALID_INPUT
from durable_agents.contracts.session import TurnResult
from durable_agents.loop.output import (
    FINAL_RESULT_TOOL,
    OutputSpec,
    final_result_tool,
    parse_final_result,
    parse_text,
    schema_problem,
)
from durable_agents.testing import fake_openai as fake
from tests.catalog import TEST_CATALOG
from tests.conftest import AgentHarness, ScriptedHarness
from tests.scripted_model import call, tool_calls

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
    "additionalProperties": False,
}
GOOD = {"city": "Paris", "celsius": 21.5}


class Verdict(BaseModel):
    """An output type registered by the application, as it registers tools."""

    label: str = Field(pattern="^(yes|no)$")
    confidence: float = Field(ge=0, le=1)


if TEST_CATALOG.output_types.get("Verdict") is None:
    TEST_CATALOG.output_types.register(Verdict)


def final(arguments: Any, id: str = "f1") -> Any:
    return tool_calls(call(FINAL_RESULT_TOOL, arguments, id=id))


# --- pure: parsing and validating -------------------------------------------------------------


def spec(schema: dict[str, Any] = WEATHER, mode: str = "tool") -> OutputSpec:
    return OutputSpec(schema, mode, retries=2)  # type: ignore[arg-type]


def test_final_result_arguments_are_validated() -> None:
    assert parse_final_result(spec(), json.dumps(GOOD)) == (GOOD, [])
    value, errors = parse_final_result(spec(), '{"city": "Paris"}')
    assert value is None and errors == ["(root): 'celsius' is a required property"]
    _, errors = parse_final_result(spec(), '{"city": 3, "celsius": 1}')
    assert errors == ["city: 3 is not of type 'string'"]
    _, errors = parse_final_result(spec(), "{not json")
    assert errors[0].startswith("the arguments are not valid JSON")


def test_a_schema_that_is_not_an_object_is_wrapped_for_the_tool() -> None:
    numbers = spec({"type": "array", "items": {"type": "integer"}})
    tool = final_result_tool(numbers)
    assert tool.parameters["properties"]["result"] == numbers.schema
    assert parse_final_result(numbers, '{"result": [1, 2]}') == ([1, 2], [])
    assert parse_final_result(numbers, "[1, 2]")[1] == [
        "(root): the answer goes in the 'result' argument"
    ]


def test_text_answers_may_be_fenced_json() -> None:
    assert parse_text(spec(), "```json\n" + json.dumps(GOOD) + "\n```") == (GOOD, [])
    assert parse_text(spec(), "It is sunny")[1][0].startswith("the answer is not valid JSON")


def test_schema_problems_are_named() -> None:
    assert schema_problem(WEATHER) is None
    problem = schema_problem({"type": "objekt"})
    assert problem is not None and "objekt" in problem


# --- the loop, on the scripted model ----------------------------------------------------------


async def test_the_answer_is_the_validated_output(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(final(GOOD))
    result, _ = await scripted_agent.run({"prompt": "weather?", "output_schema": WEATHER})

    assert result.stop_reason == "completed"
    assert result.output == GOOD
    assert json.loads(result.answer) == GOOD
    [offered] = [t for t in scripted_agent.model.requests[0].tools if t.name == FINAL_RESULT_TOOL]
    assert offered.parameters == WEATHER
    # the free-text stop tool is not offered when the run must end with a typed answer
    assert "final_answer" not in [t.name for t in scripted_agent.model.requests[0].tools]


async def test_invalid_twice_then_valid(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        final({"city": "Paris"}, id="a"),
        final({"city": "Paris", "celsius": "warm"}, id="b"),
        final(GOOD, id="c"),
    )
    result, _ = await scripted_agent.run({"prompt": "weather?", "output_schema": WEATHER})

    assert (result.stop_reason, result.output, result.iterations) == ("completed", GOOD, 3)
    second = scripted_agent.model.requests[1].messages
    assert second[-1].role == "tool" and second[-1].tool_call_id == "a"
    assert "'celsius' is a required property" in (second[-1].content or "")
    assert "Call final_result with arguments that match the schema." in (second[-1].content or "")
    third = scripted_agent.model.requests[2].messages[-1].content or ""
    assert "celsius: 'warm' is not of type 'number'" in third
    assert [s.status for s in result.steps] == ["error", "error"]


async def test_invalid_three_times_stops_with_invalid_output(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        final({"city": "Paris"}, id="a"), final({"city": 1}, id="b"), final({"x": 1}, id="c")
    )
    result, _ = await scripted_agent.run({"prompt": "weather?", "output_schema": WEATHER})

    assert result.stop_reason == "invalid_output"
    assert result.output is None
    assert json.loads(result.answer) == {"x": 1}  # the last raw answer
    assert "(root): 'city' is a required property" in result.output_errors
    assert scripted_agent.model.request_count == 3


async def test_output_retries_zero_stops_at_the_first_invalid_answer(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue("no idea")
    result, _ = await scripted_agent.run(
        {"prompt": "weather?", "output_schema": WEATHER, "output_retries": 0}
    )
    assert (result.stop_reason, result.answer) == ("invalid_output", "no idea")
    assert result.output_errors[0].startswith("the answer is not valid JSON")


async def test_a_plain_json_text_answer_is_accepted(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(json.dumps(GOOD))
    result, _ = await scripted_agent.run({"prompt": "weather?", "output_schema": WEATHER})
    assert (result.stop_reason, result.output) == ("completed", GOOD)


async def test_a_text_answer_that_is_not_json_is_sent_back(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue("It is 21 degrees in Paris.", final(GOOD))
    result, _ = await scripted_agent.run({"prompt": "weather?", "output_schema": WEATHER})

    assert (result.stop_reason, result.output) == ("completed", GOOD)
    retry = scripted_agent.model.requests[1].messages
    assert [m.role for m in retry[-2:]] == ["assistant", "user"]
    assert retry[-2].content == "It is 21 degrees in Paris."
    assert "not valid JSON" in (retry[-1].content or "")
    # the model never called final_result: it is told to call it, not to call it "again"
    told = retry[-1].content or ""
    assert "by calling the final_result tool" in told and "again" not in told


async def test_other_tools_run_before_the_final_result(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        tool_calls(call("calculator", {"expression": "20 + 1.5"}, id="c")), final(GOOD)
    )
    result, _ = await scripted_agent.run({"prompt": "weather?", "output_schema": WEATHER})
    assert [s.tool for s in result.steps] == ["calculator"]
    assert result.output == GOOD


async def test_native_mode_asks_for_response_format(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue('{"city": "Paris"}', json.dumps(GOOD))
    result, _ = await scripted_agent.run(
        {"prompt": "weather?", "output_schema": WEATHER, "structured_output": "native"}
    )

    assert (result.stop_reason, result.output) == ("completed", GOOD)
    first = scripted_agent.model.requests[0]
    assert first.response_format == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": WEATHER, "strict": True},
    }
    assert FINAL_RESULT_TOOL not in [t.name for t in first.tools]
    told = scripted_agent.model.requests[1].messages[-1].content or ""
    assert "Reply with only JSON that matches the schema." in told and "again" not in told


async def test_a_registered_output_type(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        final({"label": "maybe", "confidence": 0.5}, id="a"),
        final({"label": "yes", "confidence": 0.9}, id="b"),
    )
    result, _ = await scripted_agent.run({"prompt": "ok?", "output_type": "Verdict"})

    assert result.output == {"label": "yes", "confidence": 0.9}
    tool = next(t for t in scripted_agent.model.requests[0].tools if t.name == FINAL_RESULT_TOOL)
    assert tool.parameters["properties"]["label"]["pattern"] == "^(yes|no)$"
    assert "label: String should match pattern" in (
        scripted_agent.model.requests[1].messages[-1].content or ""
    )


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        ({"output_schema": {"type": "objekt"}}, "output_schema: not a valid JSON Schema"),
        ({"output_type": "Nope"}, "output_type: unknown output type 'Nope'"),
        (
            {"output_schema": WEATHER, "output_type": "Verdict"},
            "give output_schema or output_type, not both",
        ),
        (
            {"output_schema": {"type": "array"}, "structured_output": "native"},
            'output_schema: structured_output "native" needs an object schema',
        ),
        ({"output_schema": WEATHER, "tools": ["final_answer"]}, "tools: final_answer ends a run"),
    ],
)
async def test_bad_output_settings_are_refused_at_start(
    scripted_agent: ScriptedHarness, payload: dict[str, Any], named: str
) -> None:
    handle = await scripted_agent.start({"prompt": "x", **payload})
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == INVALID_INPUT
    assert named in cause.message
    assert scripted_agent.model.request_count == 0


# --- sessions and the wire ---------------------------------------------------------------------


async def test_each_session_turn_can_have_a_schema(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue("hello there", final(GOOD))
    session = await scripted_agent.client.start_workflow(
        "SessionWorkflow", {}, id=f"session-{uuid.uuid4()}", task_queue=scripted_agent.task_queue
    )
    plain = await session.execute_update("send", {"text": "hi"}, result_type=TurnResult)
    typed = await session.execute_update(
        "send", {"text": "weather?", "output_schema": WEATHER}, result_type=TurnResult
    )

    assert (plain.answer, plain.output) == ("hello there", None)
    assert typed.output == GOOD and json.loads(typed.answer) == GOOD
    first_tools = [t.name for t in scripted_agent.model.requests[0].tools]
    second_tools = [t.name for t in scripted_agent.model.requests[1].tools]
    assert FINAL_RESULT_TOOL not in first_tools and FINAL_RESULT_TOOL in second_tools


async def test_a_session_refuses_a_bad_schema_before_it_enters_history(
    scripted_agent: ScriptedHarness,
) -> None:
    session = await scripted_agent.client.start_workflow(
        "SessionWorkflow", {}, id=f"session-{uuid.uuid4()}", task_queue=scripted_agent.task_queue
    )
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await session.execute_update(
            "send", {"text": "x", "output_schema": {"type": 5}}, result_type=TurnResult
        )
    assert isinstance(refused.value.cause, ApplicationError)
    assert "output_schema: not a valid JSON Schema" in refused.value.cause.message
    assert scripted_agent.model.request_count == 0


async def test_final_result_over_the_wire(agent: AgentHarness) -> None:
    agent.fake.enqueue(fake.tool_calls(fake.call(FINAL_RESULT_TOOL, GOOD, id="f")))
    result, _ = await agent.run({"prompt": "weather?", "output_schema": WEATHER})

    assert result.output == GOOD
    tools = {t["function"]["name"]: t["function"] for t in agent.fake.requests[0]["tools"]}
    assert tools[FINAL_RESULT_TOOL]["parameters"] == WEATHER
