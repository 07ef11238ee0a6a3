"""`agent eval`'s suite files: the shipped suite loads, and every malformed suite is refused with
an error that names the scenario and the field (cli/evaluation/suite.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from durable_agents.cli.evaluation.suite import (
    ApprovePerson,
    CancelPerson,
    RejectPerson,
    ReplyPerson,
    Suite,
    SuiteError,
    load_suite,
    parse_suite,
)

ROOT = Path(__file__).resolve().parent.parent
SEED_SUITE = ROOT / "evals" / "seed_cases.yaml"


def suite_with(**scenario: Any) -> dict[str, Any]:
    return {"name": "s", "scenarios": [{"name": "a", "prompt": "p", **scenario}]}


def problems_of(raw: Any) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        parse_suite(raw, "s.yaml")
    assert str(caught.value).startswith("s.yaml: ")
    return caught.value.problems


def test_the_shipped_suite_covers_the_seed_cases() -> None:
    suite = load_suite(SEED_SUITE)
    assert [s.name for s in suite.scenarios] == [
        "normal",
        "missing_information",
        "tool_failure",
        "service_recovers",
        "user_cancel",
        "approval_rejected",
        "max_iterations",
    ]
    by_name = {s.name: s for s in suite.scenarios}
    assert by_name["normal"].prompt == "What is 17 * 25?"
    assert isinstance(by_name["missing_information"].people[0], ReplyPerson)
    assert by_name["user_cancel"].cancel == CancelPerson(action="cancel", after_steps=1)
    assert by_name["user_cancel"].expect.ending == "cancelled"
    rejecting, approving = by_name["approval_rejected"].people
    assert isinstance(rejecting, RejectPerson) and rejecting.times == 1
    assert isinstance(approving, ApprovePerson)
    assert by_name["max_iterations"].expect.stop_reason == ["max_iterations"]
    assert suite.prices["demo-offline"].input_per_million == 0


def test_payload_merges_defaults_input_prompt_and_model() -> None:
    suite = Suite.model_validate(
        {
            "name": "s",
            "defaults": {"max_iterations": 4, "tools": ["calculator"]},
            "scenarios": [{"name": "a", "prompt": "p", "input": {"max_iterations": 2}}],
        }
    )
    scenario = suite.scenarios[0]
    assert suite.payload(scenario, None) == {
        "max_iterations": 2,
        "tools": ["calculator"],
        "prompt": "p",
    }
    assert suite.payload(scenario, "gpt-x")["model"] == "gpt-x"


def test_one_or_many_and_unset_output() -> None:
    suite = parse_suite(suite_with(expect={"answer_contains": "x", "stop_reason": "completed"}))
    expect = suite.scenarios[0].expect
    assert expect.answer_contains == ["x"]
    assert expect.stop_reason == ["completed"]
    assert not expect.checks_output
    with_null = parse_suite(suite_with(expect={"output": None})).scenarios[0].expect
    assert with_null.checks_output  # `output: null` checks for null


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            suite_with(expect={"answer_contain": "425"}),
            "scenario 'a': expect.answer_contain: unknown field (did you mean 'answer_contains'?)",
        ),
        (
            suite_with(people=[{"action": "reject"}]),
            "scenario 'a': people[0].reason: Field required",
        ),
        (
            suite_with(people=[{"action": "reply", "text": "x", "tol": "ask_user"}]),
            "scenario 'a': people[0].tol: unknown field (did you mean 'tool'?)",
        ),
        (
            suite_with(people=[{"action": "shout"}]),
            "scenario 'a': people[0]: Input tag 'shout' found using 'action' does not match any "
            "of the expected tags: 'approve', 'reject', 'reply', 'cancel'",
        ),
        (
            suite_with(people=[{"action": "cancel", "after_steps": 1}] * 2),
            "scenario 'a': people: at most one cancel",
        ),
        (
            suite_with(input={"max_iterations": 0}),
            "scenario 'a': input.max_iterations: Input should be greater than or equal to 1",
        ),
        (
            suite_with(input={"max_iteration": 3}),
            "scenario 'a': input.max_iteration: not an AgentInput field "
            "(did you mean 'max_iterations'?)",
        ),
        (
            suite_with(input={"model": "gpt-x"}),
            "scenario 'a': input: 'model' is set with --model or models, not in input",
        ),
        (
            suite_with(expect={"answer_matches": "(("}),
            "scenario 'a': expect.answer_matches: not a valid regular expression: missing ), "
            "unterminated subpattern at position 1",
        ),
        (
            suite_with(expect={"stop_reason": "finished"}),
            "scenario 'a': expect.stop_reason[0]: Input should be 'completed', "
            "'max_iterations', 'empty_answer', ",  # ... every StopReason
        ),
        (
            suite_with(expect={"ending": "done"}),
            "scenario 'a': expect.ending: Input should be 'completed', 'failed', 'cancelled', "
            "'terminated' or 'timed_out'",
        ),
        (
            {"name": "s", "scenarios": [{"name": "no spaces", "prompt": "p"}]},
            "scenario 'no spaces': name: use letters, digits, '_', '.' and '-' (the name goes "
            "into workflow ids)",
        ),
        (
            {"name": "s", "scenarios": [{"prompt": "p"}]},
            "scenarios[0]: name: Field required",
        ),
        (
            {"name": "s", "scenarios": []},
            "scenarios: List should have at least 1 item after validation, not 0",
        ),
        (
            {"name": "s", "repeat": 0, "scenarios": [{"name": "a", "prompt": "p"}]},
            "repeat: Input should be greater than or equal to 1",
        ),
        (
            {"name": "s", "prices": {"m": {"input_per_million": 1}}, "scenarios": []},
            "prices.m.output_per_million: Field required",
        ),
        (["a list"], "a suite is a mapping with name and scenarios; this is a list"),
        (None, "a suite is a mapping with name and scenarios; this is empty"),
    ],
)
def test_a_malformed_suite_names_the_scenario_and_the_field(raw: Any, expected: str) -> None:
    problems = problems_of(raw)
    assert any(problem.startswith(expected) for problem in problems), problems


def test_a_bad_default_is_reported_once_on_defaults() -> None:
    raw = {
        "name": "s",
        "defaults": {"max_iterations": "lots"},
        "scenarios": [{"name": "a", "prompt": "p"}, {"name": "b", "prompt": "q"}],
    }
    assert problems_of(raw) == ["defaults.max_iterations: Input should be a valid integer"]


def test_every_problem_is_reported_at_once() -> None:
    raw = {
        "name": "s",
        "scenarios": [
            {"name": "a", "prompt": "p", "expect": {"max_step": 2}},
            {"name": "b", "prompt": ""},
        ],
    }
    assert problems_of(raw) == [
        "scenario 'a': expect.max_step: unknown field (did you mean 'max_steps'?)",
        "scenario 'b': prompt: String should have at least 1 character",
    ]


def test_duplicate_names_are_refused() -> None:
    raw = {"name": "s", "scenarios": [{"name": "a", "prompt": "p"}, {"name": "a", "prompt": "q"}]}
    assert problems_of(raw) == ["scenario 'a': name: used by another scenario"]


def test_yaml_errors_say_where(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: s\nscenarios:\n  - name: a\n    prompt: [unclosed\n")
    with pytest.raises(SuiteError) as caught:
        load_suite(broken)
    assert str(caught.value).startswith(f"{broken}: line ")
    assert "not valid YAML" in str(caught.value)
    with pytest.raises(SuiteError, match="cannot read it"):
        load_suite(tmp_path / "missing.yaml")


def test_select_by_name_and_tag() -> None:
    suite = load_suite(SEED_SUITE)
    assert [s.name for s in suite.select(["normal"], None)] == ["normal"]
    assert [s.name for s in suite.select(None, ["human"])] == [
        "missing_information",
        "user_cancel",
        "approval_rejected",
    ]
    with pytest.raises(SuiteError, match="no scenario 'nope'"):
        suite.select(["nope"], None)
    with pytest.raises(SuiteError, match="no scenario has the tag"):
        suite.select(None, ["nope"])
