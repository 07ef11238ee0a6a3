"""Plan steps that are tool actions (run by the engine, no model call), references to earlier
results, the steps' expectations, the plan's answer template (filled in instead of a synthesis
call), and the plan's revisions (a failed step, a missed expectation, steering). Pure functions
first; then runs on the real worker and server with the scripted model answering planner,
checks and synthesis."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.demo_model import (
    DemoChatModel,
    chain,
    chained_move,
    demo_plan,
    plan_steps,
)
from durable_agents.cli.evaluation.suite import load_suite
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.messages import ChatMessage, SteerMessage
from durable_agents.contracts.model_io import ModelRequest, ToolSchema
from durable_agents.contracts.plan import EditPlan, Plan, PlanStep, StepExpectation, StepOutcome
from durable_agents.loop.plan import (
    PLANNER_PROMPT,
    new_plan,
    plan_tool,
    planning_request,
    revised,
    step_task,
    with_notes,
    with_outcome,
    with_status,
)
from durable_agents.loop.plan_actions import action_call_id, action_reply
from durable_agents.loop.plan_answer import templated_answer
from durable_agents.loop.plan_expect import (
    as_number,
    check_tool,
    plain_verdict,
    read_check,
    wildcard_match,
)
from durable_agents.loop.plan_refs import MissingResult, plan_problems, put_in, resolve_args
from durable_agents.loop.plan_schema import compact_schema
from testkit.eventually import eventually
from tests.conftest import ScriptedHarness, activity_types, local_activities, started_workers
from tests.replaying import assert_replays
from tests.scripted_model import Completion, call, tool_calls
from tests.test_bad_input import workflow_task_failures

CALC = "calculator"
TWO_STEPS = {
    "steps": [
        {"goal": "17 * 25", "tool": CALC, "args": {"expression": "17 * 25"}},
        {"tool": CALC, "args": {"expression": "${steps.1.result} + 8"}},
    ]
}


def plan_of(*steps: dict[str, Any]) -> Plan:
    return Plan.model_validate({"steps": list(steps)})


def action(expression: str, **more: Any) -> dict[str, Any]:
    return {"tool": CALC, "args": {"expression": expression}, **more}


# --- the plan's steps: kinds and references -----------------------------------------------------


def test_a_tool_action_needs_no_goal_and_takes_no_goal_step_fields() -> None:
    step = PlanStep.model_validate(action("6*7"))
    assert step.is_action and step.goal == 'calculator {"expression": "6*7"}'
    assert not PlanStep(goal="think").is_action
    with pytest.raises(ValidationError, match="only a tool action"):
        PlanStep.model_validate({"goal": "x", "args": {"a": 1}})
    with pytest.raises(ValidationError, match="`tools` is for goal steps"):
        PlanStep.model_validate({**action("1"), "tools": [CALC]})


def test_references_must_name_an_earlier_step() -> None:
    steps = plan_of(
        action("${steps.1.result}"),  # the first step has nothing before it
        action("${steps.3.result} + 1"),  # a later step
        action("${step.1} + 1"),  # not the syntax
        action("${steps.2.result} * 2"),  # fine
    ).steps
    problems = plan_problems(steps, 1, {CALC})
    assert problems == [
        "step 1: args.expression: ${steps.1.result}: the first step has no earlier results",
        "step 2: args.expression: ${steps.3.result} names step 3, which does not run before "
        "step 2; a step may use only the results of steps 1 to 1",
        "step 3: args.expression: '${step.1}' is not a reference; write ${steps.<n>.result} "
        "(n: the number of an earlier step)",
    ]


def test_a_revisions_steps_are_numbered_after_the_steps_done() -> None:
    revision = plan_of(action("${steps.2.result} + 1"), {"tool": "nope", "args": {}})
    assert plan_problems(revision.steps, 3, {CALC}) == [
        "step 4: unknown tool 'nope' (the run's tools: calculator)"
    ]
    assert "the first step has no earlier results" in plan_problems(revision.steps, 1, {CALC})[1]


def test_references_are_put_in_as_text_or_as_the_whole_value() -> None:
    results = {1: "425", 2: '{"n": 3}', 3: "not json"}
    args = {
        "expression": "${steps.1.result} + 8",
        "count": "${steps.1.result}",
        "nested": ["${steps.2.result}", {"x": "${steps.3.result}"}],
        "plain": 5,
    }
    assert resolve_args(args, results) == {
        "expression": "425 + 8",
        "count": 425,
        "nested": [{"n": 3}, {"x": "not json"}],
        "plain": 5,
    }
    with pytest.raises(MissingResult, match="step 4 has no result"):
        resolve_args({"a": "${steps.4.result}"}, results)


def test_an_edited_plan_with_a_bad_reference_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"step 2: args.expression: .* names step 2"):
        EditPlan.model_validate({"steps": [action("1"), action("${steps.2.result}")]})


def test_the_action_call_uses_earlier_results_and_a_unique_id() -> None:
    state = new_plan(Plan.model_validate(TWO_STEPS))
    done = StepOutcome(index=1, goal="17 * 25", status="done", answer="425")
    state = with_outcome(state, done)
    reply = action_reply(state, 1)
    assert not isinstance(reply, str)
    [made] = reply.tool_calls
    assert (made.id, made.name, json.loads(made.arguments)) == (
        "step-2",
        CALC,
        {"expression": "425 + 8"},
    )
    failed = with_outcome(
        new_plan(Plan.model_validate(TWO_STEPS)), done.model_copy(update={"status": "failed"})
    )
    assert str(action_reply(failed, 1)).startswith("Error: step 1 has no result")
    later = revised(failed, plan_of(action("1")), "because")
    assert action_call_id(later, 0) == "step-1-r1" and later.revised_because == ["because"]


# --- the answer template -----------------------------------------------------------------------

ANSWERED = {**TWO_STEPS, "answer": "17 * 25 + 8 = ${steps.2.result}"}


def test_an_answer_template_must_name_steps_of_the_plan() -> None:
    steps = Plan.model_validate(TWO_STEPS).steps
    assert plan_problems(steps, 1, {CALC}, "${steps.1.result}, ${steps.2.result}") == []
    assert plan_problems(steps, 1, {CALC}, "${steps.3.result} and ${step.1}") == [
        "answer: ${steps.3.result} names step 3; the plan has steps 1 to 2",
        "answer: '${step.1}' is not a reference; write ${steps.<n>.result} (n: the number of "
        "an earlier step)",
    ]
    # a revision's template may use the steps done: it follows steps 1 to 3 here
    assert plan_problems(steps, 4, {CALC}, "${steps.1.result} then ${steps.5.result}") == []
    assert plan_problems(steps, 4, {CALC}, "${steps.6.result}") == [
        "answer: ${steps.6.result} names step 6; the plan has steps 1 to 5"
    ]
    with pytest.raises(ValidationError, match=r"answer: \$\{steps.3.result\} names step 3"):
        EditPlan.model_validate({**TWO_STEPS, "answer": "${steps.3.result}"})


def done_actions(plan: dict[str, Any], *results: str) -> Any:
    state = new_plan(Plan.model_validate(plan))
    for number, result in enumerate(results, start=1):
        goal = state.steps[number - 1].goal
        state = with_outcome(
            state, StepOutcome(index=number, goal=goal, status="done", answer=result)
        )
    return state


def test_the_template_is_the_answer_only_when_every_step_is_a_tool_action_that_succeeded() -> None:
    state = done_actions(ANSWERED, "425", "433")
    assert state.answer == ANSWERED["answer"]
    assert templated_answer(state) == "17 * 25 + 8 = 433"
    assert put_in("${steps.1.result}!", {1: "425"}) == "425!"
    assert templated_answer(done_actions(TWO_STEPS, "425", "433")) is None  # no template
    assert templated_answer(done_actions(ANSWERED, "425")) is None  # a step not run
    failed = with_status(state, 1, "failed")
    assert templated_answer(failed) is None  # a failed step (no replans left)
    with_goal = {"steps": [action("6*7"), {"goal": "Explain it"}], "answer": "${steps.2.result}"}
    assert templated_answer(done_actions(with_goal, "42", "It is 42.")) is None  # a goal step
    steered = with_notes(state, [SteerMessage(text="Answer in French.")])
    assert templated_answer(steered) is None  # what people said is for a model to read
    earlier = StepOutcome(index=2, goal="x", status="failed", answer="Error: no")
    recovered = state.model_copy(update={"outcomes": [earlier, *state.outcomes]})
    assert templated_answer(recovered) is None  # a failure on the way: the answer may tell it
    later = revised(
        with_status(new_plan(Plan.model_validate(ANSWERED)), 0, "done"), plan_of(action("1"))
    )
    assert later.answer is None  # a revision's template replaces the plan's (here: none)


def test_the_planner_is_told_each_kind_of_step_and_given_a_compact_schema() -> None:
    for told in ('{"tool", "args"}', '{"goal"}', "${steps.1.result}", '"expect"', '"answer"'):
        assert told in PLANNER_PROMPT
    for tool in (plan_tool(), check_tool()):
        text = json.dumps(tool.parameters)
        assert '"title"' not in text and '"null"' not in text, text
    step = plan_tool().parameters["$defs"]["PlanStep"]["properties"]
    assert step["tool"] == {
        "minLength": 1,
        "type": "string",
        "description": PlanStep.model_fields["tool"].description,
    }
    assert "${steps.<n>.result}" in plan_tool().parameters["properties"]["answer"]["description"]
    # a field named like a keyword stays; a docstring of a model is left out
    named = {"properties": {"title": {"title": "Title", "type": "string"}}, "description": "x"}
    assert compact_schema(named) == {"properties": {"title": {"type": "string"}}}


# --- expectations -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expect", "result", "met"),
    [
        ({"equals": 425}, "425", True),
        ({"equals": 425}, "425.0", True),
        ({"equals": 425}, "433", False),
        ({"equals": "yes"}, " yes ", True),
        ({"contains": "PAID"}, "paid 5 to bob", True),
        ({"matches": "order #*"}, "Order #42", True),
        ({"matches": "order #*"}, "Error: no", False),
        ({"matches": "*pa?d*"}, "it was PAID today", True),
        ({"min": 400, "max": 500}, "The answer is 433.", True),
        ({"min": 500}, "433", False),
        ({"max": 1}, "no number here", False),
    ],
)
def test_plain_expectations_are_decided_by_comparison(
    expect: dict[str, Any], result: str, met: bool
) -> None:
    verdict = plain_verdict(StepExpectation.model_validate(expect), result)
    assert verdict is not None and verdict.met is met


def test_a_wildcard_pattern_cannot_backtrack_for_long() -> None:
    """A pattern a regular expression would take exponential time over (`(a*)*b`-like) is
    linear work here: workflow code never runs a planner's regular expression."""
    assert not wildcard_match("*a*a*a*a*a*a*a*a*b", "a" * 10_000)
    assert wildcard_match("*a*b", "x" * 5_000 + "ab")
    assert wildcard_match("???", "abc") and not wildcard_match("???", "ab")


def test_only_a_check_in_words_needs_the_model_and_only_after_the_plain_ones_pass() -> None:
    words = StepExpectation(check="a plausible price", min=0)
    assert plain_verdict(words, "12") is None
    missed = plain_verdict(words, "-3")
    assert missed is not None and not missed.met
    assert as_number("it costs 12 dollars") == 12 and as_number("1 and 2") is None
    verdict = read_check('{"met": false, "reason": "too cheap"}')
    assert not isinstance(verdict, str) and verdict.describe() == (
        "missed: checked by the model: too cheap"
    )
    assert "invalid" in str(read_check('{"met": "perhaps"}'))
    with pytest.raises(ValidationError, match="at most 200"):
        StepExpectation(matches="*" * 201)
    with pytest.raises(ValidationError, match="needs at least one"):
        StepExpectation()


# --- what a step and the planner are told -------------------------------------------------------


def test_a_goal_step_is_shown_the_whole_plan_and_its_place() -> None:
    state = with_status(new_plan(plan_of(action("6*7"), {"goal": "Explain it"})), 0, "done")
    task = step_task("6*7, explained", state, 1)
    assert '  ✓ 1. calculator {"expression": "6*7"} [tool action: calculator]' in task
    assert "  · 2. Explain it  <- this step" in task
    assert task.splitlines()[-1] == "Your step (2 of 2): Explain it"


def test_the_planner_sees_tool_arguments_and_how_a_revision_is_numbered() -> None:
    calculator = ToolSchema(
        name=CALC,
        description="Evaluate",
        parameters={"properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    )
    state = with_status(new_plan(plan_of(action("1"), action("2"))), 0, "done")
    [_, user] = planning_request("p", [calculator], state, "Step 2 failed")
    assert "- calculator(expression: string): Evaluate" in (user.content or "")
    assert "they are numbered from 2" in (user.content or "")


# --- the demo model -----------------------------------------------------------------------------


def test_the_demo_plans_arithmetic_as_tool_actions_on_earlier_results() -> None:
    request = "Request: What is 17 * 25, then add 8 to it\nTools:\n- calculator(ex"
    plan = Plan.model_validate(demo_plan(request))
    assert [(s.tool, s.args) for s in plan.steps] == [
        (CALC, {"expression": "17 * 25"}),
        (CALC, {"expression": "${steps.1.result} + 8"}),
    ]
    assert plan.answer == "The answer is ${steps.2.result}."  # no synthesis call needed
    assert plan_problems(plan.steps, 1, {CALC}, plan.answer) == []
    both = Plan.model_validate(demo_plan("Request: What is 15 * 3, then 120 / 8\n- calculator("))
    assert both.answer == "The results are ${steps.1.result}, ${steps.2.result}."
    no_calculator = Plan.model_validate(demo_plan("Request: What is 17 * 25, then add 8 to it"))
    assert [s.tool for s in no_calculator.steps] == [None, None]
    assert chain(plan_steps("Compute 17 * 25, then write the result to x.txt")) is None


def test_the_demo_in_react_mode_chains_calculations_on_the_previous_result() -> None:
    prompt = "What is 17 * 25, then add 8 to it?"
    said = [ChatMessage.user(prompt)]
    first = chained_move(prompt, said, {CALC})
    assert not isinstance(first, str) and first is not None
    assert json.loads(first.arguments) == {"expression": "17 * 25"}
    said += [
        ChatMessage(role="assistant", tool_calls=[first.model_copy(update={"id": "a"})]),
        ChatMessage.tool_result("a", "425"),
    ]
    second = chained_move(prompt, said, {CALC})
    assert not isinstance(second, str) and second is not None
    assert json.loads(second.arguments) == {"expression": "425 + 8"}
    assert chained_move("Add 1 + 1, then 2 + 2", said, {CALC}) is None  # no "it": not this rule


# --- runs ---------------------------------------------------------------------------------------


def planner(
    plans: list[dict[str, Any]], checks: Callable[[ModelRequest], Completion] | None = None
) -> Callable[[ModelRequest], Completion | str]:
    """Planning calls get `plans` in turn (the last one again), checks `checks`, synthesis the
    steps' results; a goal step's run answers its goal's number with the calculator."""
    served = {"plans": 0}

    def answer(request: ModelRequest) -> Completion | str:
        offered = {t.name for t in request.tools}
        if request.purpose == "plan" and "report_check" in offered and checks is not None:
            return checks(request)
        if request.purpose == "plan":
            plan = plans[min(served["plans"], len(plans) - 1)]
            served["plans"] += 1
            return tool_calls(call("submit_plan", plan, id=f"p{served['plans']}"))
        if request.purpose == "synthesis":
            told = (request.messages[-1].content or "").split("What the steps found:")[-1]
            found = told.split("Write the final answer")[0]
            return "Final: " + " | ".join(line for line in found.splitlines() if ". " in line)
        if not any(m.role == "tool" for m in request.messages):
            return tool_calls(call(CALC, {"expression": "2 + 2"}, id="g1"))
        return "four"

    return answer


def plan_requests(harness: ScriptedHarness) -> list[ModelRequest]:
    return [
        r
        for r in harness.model.requests
        if r.purpose == "plan" and any(t.name == "submit_plan" for t in r.tools)
    ]


async def replays(handle: WorkflowHandle[Any, Any]) -> None:
    await assert_replays(await handle.fetch_history())


async def waiting_plan(
    harness: ScriptedHarness, plan: dict[str, Any]
) -> tuple[WorkflowHandle[Any, Any], PendingRequest]:
    """A run whose planner gives `plan`, waiting for the plan's approval; and that request."""
    harness.model.set_handler(planner([plan]))
    handle = await harness.start(
        {"prompt": "17 * 25, then add 8", "mode": "plan_and_execute", "plan_approval": True}
    )
    [request] = await eventually(
        lambda: handle.query("pending_approvals", result_type=list[PendingRequest]),
        what="the plan waiting for approval",
    )
    return handle, request


async def test_tool_actions_run_with_no_model_call_and_use_earlier_results(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(planner([TWO_STEPS]))
    result, handle = await scripted_agent.run(
        {"prompt": "17 * 25, then add 8", "mode": "plan_and_execute"}
    )

    assert result.stop_reason == "completed"
    assert [c.purpose for c in result.model_calls] == ["plan", "synthesis"]
    assert await activity_types(handle) == ["call_model", "call_model"]
    assert [summary for _, summary in await local_activities(handle)] == [
        '{"expression": "17 * 25"}',
        '{"expression": "425 + 8"}',
    ]  # the calculator's own activities, the second on the first's result
    assert [(s.call_id, s.tool, s.observation) for s in result.steps] == [
        ("step-1", CALC, "425"),
        ("step-2", CALC, "433"),
    ]
    plan = result.plan
    assert plan is not None and plan.status == ["done", "done"]
    assert [(o.answer, o.call_id, o.model_calls) for o in plan.outcomes] == [
        ("425", "step-1", 0),
        ("433", "step-2", 0),
    ]
    assert result.answer == (
        "Final: 1. 17 * 25 (done): 425 | "
        '2. calculator {"expression": "${steps.1.result} + 8"} (done): 433'
    )
    await replays(handle)


async def test_a_goal_plan_runs_its_step_with_the_model(scripted_agent: ScriptedHarness) -> None:
    """Goal steps only: each step is a model call (a child loop), no tool action."""
    scripted_agent.model.set_handler(planner([{"steps": [{"goal": "Compute 2 + 2"}]}]))
    result, handle = await scripted_agent.run({"prompt": "2 + 2", "mode": "plan_and_execute"})
    assert result.stop_reason == "completed"
    await replays(handle)
    assert result.plan is not None and result.plan.outcomes[0].model_calls == 2


async def test_a_bad_reference_is_refused_at_plan_time_and_asked_again(
    scripted_agent: ScriptedHarness,
) -> None:
    bad = {"steps": [action("6*7"), action("${steps.2.result} + 1")]}
    good = {"steps": [action("6*7"), action("${steps.1.result} + 1")]}
    scripted_agent.model.set_handler(planner([bad, good]))
    result, _ = await scripted_agent.run({"prompt": "6*7 then +1", "mode": "plan_and_execute"})

    [first, again] = plan_requests(scripted_agent)
    told = again.messages[-1].content or ""
    assert "step 2: args.expression: ${steps.2.result} names step 2, which does not run" in told
    assert len(first.messages) == 2 and len(again.messages) == 3
    assert [s.observation for s in result.steps] == ["42", "43"]


async def test_a_tool_action_waits_for_approval_and_a_rejection_revises_the_plan(
    scripted_agent: ScriptedHarness,
) -> None:
    """`pay` over 100 needs a person, for a plan's action exactly as for a model's call; the
    rejection's reason goes to the replanning call, whose step then runs."""
    big = {"steps": [{"tool": "pay", "args": {"amount": 500, "to": "bob"}}]}
    small = {"steps": [{"tool": "pay", "args": {"amount": 50, "to": "bob"}}]}
    scripted_agent.model.set_handler(planner([big, small]))
    handle = await scripted_agent.start({"prompt": "pay bob", "mode": "plan_and_execute"})
    [request] = await eventually(
        lambda: handle.query("pending_approvals", result_type=list[PendingRequest]),
        what="the plan's pay action waiting for approval",
    )
    assert (request.kind, request.call_id, request.tool) == ("approval", "step-1", "pay")
    await handle.signal("reject", {"call_id": "step-1", "reason": "at most 100", "by": "ann"})
    result = await handle.result()

    plan = result.plan
    assert plan is not None and plan.replans == 1
    assert [(o.status, o.answer.split(":")[0]) for o in plan.outcomes] == [
        ("failed", "Rejected by ann"),
        ("done", "paid 50 to bob"),
    ]
    assert "at most 100" in (plan_requests(scripted_agent)[1].messages[-1].content or "")
    assert plan.revised_because[0].startswith("Step 1 failed: Rejected by ann")
    assert [(s.call_id, s.status) for s in result.steps] == [
        ("step-1", "rejected"),
        ("step-1-r1", "ok"),
    ]


async def test_the_approval_policy_applies_to_tool_actions(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(planner([{"steps": [action("6*7")]}]))
    result, _ = await scripted_agent.run(
        {
            "prompt": "6*7",
            "mode": "plan_and_execute",
            "max_replans": 0,
            "approval_policy": {"rules": [{"tools": CALC, "action": "deny"}]},
        }
    )
    [step] = result.steps
    assert step.status == "denied" and step.policy == f"policy rule {CALC} → deny"
    assert result.plan is not None and result.plan.status == ["failed"]


async def test_a_used_up_budget_stops_before_a_tool_action(
    scripted_agent: ScriptedHarness,
) -> None:
    """The planning call spends 15 tokens of a 10-token budget: the action does not run, and
    the run stops as a ReAct run would after that call."""
    scripted_agent.model.set_handler(planner([TWO_STEPS]))
    result, _ = await scripted_agent.run(
        {"prompt": "17 * 25, then add 8", "mode": "plan_and_execute", "max_total_tokens": 10}
    )
    assert result.stop_reason == "token_budget" and result.steps == []
    assert result.plan is not None and result.plan.status == ["failed", "pending"]


async def test_a_result_that_misses_its_expectation_revises_the_plan_without_a_model_check(
    scripted_agent: ScriptedHarness,
) -> None:
    wrong = {"steps": [action("6*7", expect={"equals": 43})]}
    right = {"steps": [action("6*7 + 1", expect={"equals": 43})]}
    scripted_agent.model.set_handler(planner([wrong, right]))
    result, _ = await scripted_agent.run({"prompt": "43, please", "mode": "plan_and_execute"})

    plan = result.plan
    assert plan is not None and plan.replans == 1
    assert [(o.status, o.expectation) for o in plan.outcomes] == [
        ("failed", "missed: the result '42' is not 43"),
        ("done", "met: equals 43"),
    ]
    assert [c.purpose for c in result.model_calls] == ["plan", "plan", "synthesis"]
    told = plan_requests(scripted_agent)[1].messages[-1].content or ""
    assert "Step 1's result does not meet its expectation (missed: the result '42'" in told


async def test_an_expectation_in_words_is_checked_by_a_model_call(
    scripted_agent: ScriptedHarness,
) -> None:
    worded = {"steps": [action("6*7", expect={"check": "an even number"})]}
    asked: list[ModelRequest] = []

    def check(request: ModelRequest) -> Completion:
        asked.append(request)
        return tool_calls(call("report_check", {"met": True, "reason": "42 is even"}))

    scripted_agent.model.set_handler(planner([worded], checks=check))
    result, _ = await scripted_agent.run({"prompt": "6*7", "mode": "plan_and_execute"})

    [request] = asked
    told = request.messages[-1].content or ""
    assert "Its result: 42" in told and "Expected: an even number" in told
    assert "<- this step" in told
    assert result.plan is not None
    assert result.plan.outcomes[0].expectation == "met: checked by the model: 42 is even"
    assert [c.purpose for c in result.model_calls] == ["plan", "plan", "synthesis"]


async def test_steering_revises_the_plan_at_the_next_step_boundary(
    scripted_agent: ScriptedHarness,
) -> None:
    """A `steer` while step 1 waits for its approval: once it is approved, before step 2, the
    plan is revised with the message (a revision, recorded with why); the message stays a note
    for the synthesis."""
    first = {"steps": [{"tool": "pay", "args": {"amount": 500, "to": "bob"}}, action("1 + 1")]}
    then = {"steps": [action("2 + 2")]}
    scripted_agent.model.set_handler(planner([first, then]))
    handle = await scripted_agent.start({"prompt": "pay, then add", "mode": "plan_and_execute"})
    await eventually(
        lambda: handle.query("pending_approvals", result_type=list[PendingRequest]),
        what="step 1 waiting for approval",
    )
    await handle.execute_update("steer", {"text": "Add 2 + 2 instead.", "by": "ann"})
    await handle.signal("approve", {"call_id": "step-1"})
    result = await handle.result()

    plan = result.plan
    assert plan is not None and plan.replans == 1 and len(plan.revisions) == 2
    assert [o.answer for o in plan.outcomes] == ["paid 500 to bob", "4"]
    assert plan.revised_because == [
        "While the plan ran, people said (follow them): ann: Add 2 + 2 instead."
    ]
    assert plan.notes == ["ann: Add 2 + 2 instead."]
    revision = plan_requests(scripted_agent)[1].messages[-1].content or ""
    assert "Feedback: While the plan ran, people said (follow them): ann: Add 2 + 2" in revision
    await replays(handle)


async def test_steering_while_the_plan_waits_for_approval_is_a_note_not_a_revision(
    scripted_agent: ScriptedHarness,
) -> None:
    handle, _ = await waiting_plan(scripted_agent, TWO_STEPS)
    await handle.execute_update("steer", {"text": "Show your working."})
    await handle.signal("approve", {"call_id": "*"})
    result = await handle.result()
    assert result.plan is not None and result.plan.replans == 0
    assert result.plan.notes == ["the user: Show your working."]


async def test_a_goal_step_after_an_action_is_told_the_whole_plan(
    scripted_agent: ScriptedHarness,
) -> None:
    mixed = {"steps": [action("6*7"), {"goal": "Say what 2 + 2 is"}]}
    scripted_agent.model.set_handler(planner([mixed]))
    result, _ = await scripted_agent.run({"prompt": "both", "mode": "plan_and_execute"})
    task = next(
        m.content or ""
        for r in scripted_agent.model.requests
        if r.purpose == "turn"
        for m in r.messages
        if m.role == "user"
    )
    assert '✓ 1. calculator {"expression": "6*7"} [tool action: calculator]' in task
    assert "· 2. Say what 2 + 2 is  <- this step" in task or "→ 2. Say what" in task
    assert "Results of the earlier steps:\n1. " in task and ": 42" in task
    assert result.plan is not None
    assert [o.model_calls for o in result.plan.outcomes] == [0, 2]


async def test_edit_plan_with_a_bad_reference_is_refused_naming_the_step(
    scripted_agent: ScriptedHarness,
) -> None:
    handle, _ = await waiting_plan(scripted_agent, TWO_STEPS)
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(
            "edit_plan", {"steps": [action("${steps.1.result}"), action("1")]}
        )
    assert isinstance(refused.value.cause, ApplicationError)
    assert "step 1: args.expression: ${steps.1.result}: the first step has no earlier" in (
        refused.value.cause.message
    )
    await handle.signal("approve", {"call_id": "*"})
    result = await handle.result()
    assert isinstance(result, AgentResult) and [s.observation for s in result.steps] == [
        "425",
        "433",
    ]


# --- runs: the answer template ------------------------------------------------------------------


async def test_an_answer_template_replaces_the_synthesis_call(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(planner([ANSWERED]))
    result, handle = await scripted_agent.run(
        {"prompt": "17 * 25, then add 8", "mode": "plan_and_execute"}
    )

    assert result.stop_reason == "completed"
    assert result.answer == "17 * 25 + 8 = 433"  # the template, filled in
    assert [c.purpose for c in result.model_calls] == ["plan"]  # no synthesis call
    assert await activity_types(handle) == ["call_model"]
    assert [s.observation for s in result.steps] == ["425", "433"]
    assert result.plan is not None and result.plan.answer == ANSWERED["answer"]
    await replays(handle)


@pytest.mark.parametrize(
    ("plan", "settings", "found"),
    [
        (
            {
                "steps": [action("6*7"), {"goal": "Say what 2 + 2 is"}],
                "answer": "${steps.2.result}",
            },
            {},
            "2. Say what 2 + 2 is (done): four",
        ),
        (
            {"steps": [action("10 / 0")], "answer": "It is ${steps.1.result}."},
            {"max_replans": 0},
            '1. calculator {"expression": "10 / 0"} (failed): Error: division by zero',
        ),
    ],
    ids=["a goal step", "a failed step"],
)
async def test_a_goal_step_or_a_failed_step_still_synthesises(
    scripted_agent: ScriptedHarness, plan: dict[str, Any], settings: dict[str, Any], found: str
) -> None:
    scripted_agent.model.set_handler(planner([plan]))
    result, _ = await scripted_agent.run(
        {"prompt": "two things", "mode": "plan_and_execute", **settings}
    )
    assert [c.purpose for c in result.model_calls] == ["plan", "synthesis"]
    assert result.answer.startswith("Final: ") and found in result.answer


async def test_a_bad_answer_template_is_refused_at_plan_time_and_asked_again(
    scripted_agent: ScriptedHarness,
) -> None:
    bad = {**TWO_STEPS, "answer": "${steps.3.result}"}
    scripted_agent.model.set_handler(planner([bad, ANSWERED]))
    result, _ = await scripted_agent.run(
        {"prompt": "17 * 25, then add 8", "mode": "plan_and_execute"}
    )

    [_, again] = plan_requests(scripted_agent)
    told = again.messages[-1].content or ""
    assert "answer: ${steps.3.result} names step 3; the plan has steps 1 to 2" in told
    assert result.steps and len(result.steps) == 2  # nothing ran before the plan was usable
    assert [c.purpose for c in result.model_calls] == ["plan", "plan"]
    assert result.answer == "17 * 25 + 8 = 433"


async def test_an_approver_sees_the_template_and_an_edit_may_set_it(
    scripted_agent: ScriptedHarness,
) -> None:
    handle, request = await waiting_plan(scripted_agent, ANSWERED)
    assert request.args["answer"] == ANSWERED["answer"]
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update("edit_plan", {**TWO_STEPS, "answer": "${steps.9.result}"})
    assert isinstance(refused.value.cause, ApplicationError)
    assert "answer: ${steps.9.result} names step 9" in refused.value.cause.message
    await handle.execute_update("edit_plan", {**TWO_STEPS, "answer": "Total: ${steps.2.result}"})
    result = await handle.result()
    assert result.answer == "Total: 433"
    assert [c.purpose for c in result.model_calls] == ["plan"]


MULTI_STEP = Path(__file__).resolve().parents[1] / "evals" / "multi_step.yaml"


async def test_on_the_demo_model_each_plan_of_the_suite_costs_less_than_react(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """evals/multi_step.yaml's pairs (the README's table): the same answer, fewer model calls
    and fewer tokens (as the demo counts them: `loop.tokens`) planned first than in ReAct."""
    suite = load_suite(MULTI_STEP)
    pairs = {s.name.split(".")[0] for s in suite.scenarios}
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, temporal_env.client, DemoChatModel(), tmp_path)
        for pair in sorted(pairs):
            runs: dict[str, AgentResult] = {}
            for mode in ("react", "plan"):
                scenario = next(s for s in suite.scenarios if s.name == f"{pair}.{mode}")
                runs[mode] = await temporal_env.client.execute_workflow(
                    "AgentWorkflow",
                    suite.payload(scenario, None),
                    id=f"multi-step-{scenario.name}-{uuid.uuid4()}",
                    task_queue=queue,
                    result_type=AgentResult,
                )
                assert all(part in runs[mode].answer for part in scenario.expect.answer_contains)
            react, plan = runs["react"], runs["plan"]
            assert [c.purpose for c in plan.model_calls] == ["plan"], pair
            assert len(plan.model_calls) < len(react.model_calls), pair
            assert plan.usage.total_tokens < react.usage.total_tokens, (pair, plan.usage)


async def test_a_reference_to_a_step_of_thousands_of_digits_is_refused_not_a_wedge(
    scripted_agent: ScriptedHarness,
) -> None:
    """A planner's reference naming a step by a number too long for `int` (over 4300 digits) is
    a problem told to the planner, like any bad reference: no workflow task fails on it."""
    huge = "${steps." + "9" * 5_000 + ".result}"
    bad = {"steps": [action("6*7"), action(huge + " + 1")]}
    good = {"steps": [action("6*7"), action("${steps.1.result} + 1")]}
    scripted_agent.model.set_handler(planner([bad, good]))
    handle = await scripted_agent.start({"prompt": "6*7 then +1", "mode": "plan_and_execute"})

    async def ended_or_wedged() -> bool:
        described = await handle.describe()
        running = described.status == WorkflowExecutionStatus.RUNNING
        return not running or bool(await workflow_task_failures(handle))

    await eventually(ended_or_wedged, what="the run to end (or a workflow task to fail)")
    assert await workflow_task_failures(handle) == []
    result = await handle.result()
    assert [s.observation for s in result.steps] == ["42", "43"]
    [_, again] = plan_requests(scripted_agent)
    assert "step 2: args.expression: '${steps.999" in (again.messages[-1].content or "")
