"""The demo model's rules for the evaluation suite's harder cases (`evals/seed_cases.yaml`),
driven conversation by conversation without a server: the tools run in memory (the real
calculator), a scripted person answers questions and approvals."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from durable_agents.activities.demo_model import DemoChatModel, find_expressions
from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import ModelRequest, ToolSchema
from durable_agents.tools.builtin.calculator import evaluate, format_result
from durable_agents.tools.definition import ToolError

ALL_TOOLS = ["calculator", "current_time", "write_file", "ask_user"]
Person = Callable[[str, dict[str, object]], str]


def _tool_result(name: str, args: dict[str, object], person: Person) -> str:
    if name == "calculator":
        try:
            return format_result(evaluate(str(args["expression"])))
        except ToolError as error:
            return f"Error: {error}"
    if name in ("ask_user", "write_file"):
        return person(name, args)
    return "ok"


async def converse(
    prompt: str, person: Person, tools: list[str] = ALL_TOOLS, turns: int = 10
) -> tuple[list[tuple[str, dict[str, object]]], str | None]:
    """Run the demo model for up to `turns` model calls; the calls it made and its answer."""
    schemas = [ToolSchema(name=t, description=t, parameters={"type": "object"}) for t in tools]
    messages = [ChatMessage.system("You are helpful."), ChatMessage.user(prompt)]
    calls: list[tuple[str, dict[str, object]]] = []
    for _ in range(turns):
        reply = await DemoChatModel().complete(ModelRequest(messages=messages, tools=schemas))
        messages.append(reply.as_message())
        if not reply.tool_calls:
            return calls, reply.content
        for call in reply.tool_calls:
            args = json.loads(call.arguments)
            calls.append((call.name, args))
            observation = _tool_result(call.name, args, person)
            messages.append(ChatMessage(role="tool", content=observation, tool_call_id=call.id))
    return calls, None


def nobody(name: str, args: dict[str, object]) -> str:
    raise AssertionError(f"nobody expected {name} {args}")


def test_find_expressions_finds_each_in_order() -> None:
    assert find_expressions("1 + 1, then 2 + 2, then 3 times 4. Then list them.") == [
        "1 + 1",
        "2 + 2",
        "3 * 4",
    ]
    assert find_expressions("no numbers here") == []


async def test_missing_information_is_asked_for() -> None:
    asked: list[str] = []

    def person(name: str, args: dict[str, object]) -> str:
        assert name == "ask_user"
        asked.append(str(args["question"]))
        return "There are four of us, me included."

    calls, answer = await converse(
        "Split a restaurant bill of 120 dollars evenly between my friends and me. "
        "How much does each of us pay?",
        person,
    )
    assert asked == ["How many people share it, you included?"]
    assert [name for name, _ in calls] == ["ask_user", "calculator"]
    assert calls[1][1] == {"expression": "120 / 4"}
    assert answer == "The answer is 30."


async def test_a_calculator_error_is_recovered_from() -> None:
    calls, answer = await converse(
        "Evaluate '17 x 25' with the calculator exactly as written; if it is refused, fix the "
        "expression and try again.",
        nobody,
    )
    assert calls == [
        ("calculator", {"expression": "17 x 25"}),
        ("calculator", {"expression": "17 * 25"}),
    ]
    assert answer == "The answer is 425."


async def test_an_error_that_cannot_be_fixed_is_reported() -> None:
    calls, answer = await converse("Evaluate '1/0' exactly as written", nobody)
    assert calls == [("calculator", {"expression": "1/0"})]
    assert answer == "The calculator could not help: Error: division by zero"


async def test_a_chain_is_one_call_per_turn() -> None:
    prompt = "One at a time: 1 + 1, then 2 + 2, then 3 + 3. Then list the results."
    calls, answer = await converse(prompt, nobody)
    assert [args["expression"] for _, args in calls] == ["1 + 1", "2 + 2", "3 + 3"]
    assert answer == "The results are 2, 4, 6."
    cut_short, none = await converse(prompt, nobody, turns=2)
    assert len(cut_short) == 2 and none is None


async def test_compute_then_write_waits_on_the_write() -> None:
    written: list[dict[str, object]] = []

    def person(name: str, args: dict[str, object]) -> str:
        written.append(args)
        return f"wrote 3 bytes to {args['path']}"

    calls, answer = await converse("Compute 17 * 25, then write the result to total.txt", person)
    assert [name for name, _ in calls] == ["calculator", "write_file"]
    assert written == [{"path": "total.txt", "content": "425"}]
    assert answer == "Done: I wrote 3 bytes to total.txt."


async def test_a_rejected_write_goes_where_the_reviewer_said() -> None:
    def person(name: str, args: dict[str, object]) -> str:
        if args["path"] == "notes.txt":
            return (
                "Rejected by eval: not notes.txt: write it to eval-notes.txt instead. The "
                "write_file call was not run; find another way or answer without it."
            )
        return f"wrote 11 bytes to {args['path']}"

    calls, answer = await converse("Write 'hello world' to notes.txt", person)
    assert calls == [
        ("write_file", {"path": "notes.txt", "content": "hello world"}),
        ("write_file", {"path": "eval-notes.txt", "content": "hello world"}),
    ]
    assert answer == "Done: I wrote 11 bytes to eval-notes.txt."


@pytest.mark.parametrize(
    "reason", ["not in this folder", "no, e.g. never write there", "write it to notes.txt"]
)
async def test_a_rejection_without_a_new_file_is_reported_as_before(reason: str) -> None:
    rejection = (
        f"Rejected by bob: {reason}. The write_file call was not run; find another way or "
        "answer without it."
    )
    calls, answer = await converse("Write hello world to notes.txt", lambda _n, _a: rejection)
    assert len(calls) == 1
    assert answer == f"The write_file returned: {rejection}"


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("What is 17 * 25?", [("calculator", {"expression": "17 * 25"})]),
        ("Ask me something", [("ask_user", {"question": "What would you like me to know?"})]),
        ("Split the difference, please", []),
    ],
)
async def test_other_prompts_keep_their_rules(
    prompt: str, expected: list[tuple[str, dict[str, object]]]
) -> None:
    calls, _ = await converse(prompt, lambda _n, _a: "blue", turns=5)
    assert calls == expected
