"""`agent eval` on plan-and-execute runs: a plan's goal steps are child runs, so the checks read
the whole run (the run and its child runs), not the run `agent eval` started alone: the tools a
step called (`tools_called`), a failure a step recovered from (`recovers`), and the tool steps a
scripted person counts before cancelling (`cancel` after N steps). Real worker and server; one
scripted model answers planner, steps and synthesis (cli/evaluation/runner.py, whole_run.py)."""

from __future__ import annotations

import uuid
from typing import Any

from durable_agents.cli.evaluation.runner import Job, plan_jobs, run_job
from durable_agents.cli.evaluation.scoring import RunRecord
from durable_agents.cli.evaluation.suite import parse_suite
from durable_agents.client import AgentClient
from durable_agents.contracts.model_io import ModelRequest
from tests.conftest import ScriptedHarness
from tests.scripted_model import Completion, call, tool_calls
from tests.test_plan_and_execute import step_of

POLL_SECONDS = 0.05
TIMEOUT_SECONDS = 30.0
"""A run that does not end by then is cancelled and reported (the cancel case's bound)."""


def plan_script(goals: dict[str, list[Completion | str]]) -> Any:
    """The scripted model of a plan of one goal step per entry of `goals`: each step's run
    answers with its replies in order (one per model call of the step), then the synthesis."""
    plan = {"steps": [{"goal": goal} for goal in goals]}

    def answer(request: ModelRequest) -> Completion | str:
        if request.purpose == "plan":
            return tool_calls(call("submit_plan", plan, id="p"))
        if request.purpose == "synthesis":
            return "The answer is 425."
        goal = step_of(request)
        assert goal in goals, goal
        made = sum(m.role == "tool" for m in request.messages)
        return goals[goal][min(made, len(goals[goal]) - 1)]

    return answer


async def evaluated(harness: ScriptedHarness, scenario: dict[str, Any]) -> RunRecord:
    """`scenario` run as `agent eval` runs it, in plan-and-execute mode, and its record."""
    suite = parse_suite(
        {
            "name": "plan mode",
            "defaults": {"mode": "plan_and_execute"},
            "timeout_seconds": TIMEOUT_SECONDS,
            "scenarios": [scenario],
        }
    )
    eval_id = f"eval-plan-{uuid.uuid4().hex[:6]}"
    [job] = plan_jobs(suite, suite.scenarios, [None], eval_id)
    assert isinstance(job, Job)
    return await run_job(
        AgentClient(harness.client),
        job,
        suite=suite,
        eval_id=eval_id,
        task_queue=harness.task_queue,
        poll_seconds=POLL_SECONDS,
    )


def calculator(expression: str, id: str) -> Completion:
    return tool_calls(call("calculator", {"expression": expression}, id=id))


async def test_a_tool_called_only_in_a_step_counts_as_called(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(
        plan_script({"Compute 17*25": [calculator("17*25", "c1"), "425"]})
    )
    record = await evaluated(
        scripted_agent,
        {
            "name": "normal",
            "prompt": "What is 17 * 25?",
            "input": {"tools": ["calculator"]},
            "expect": {"answer_contains": "425", "tools_called": ["calculator"], "max_steps": 1},
        },
    )

    assert record.problems == []
    assert record.tools == ["calculator"] and record.steps == 1
    assert record.turns == 4  # the plan, the step's two calls, the synthesis


async def test_a_failure_a_step_recovered_from_counts(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.set_handler(
        plan_script(
            {"Evaluate 17 x 25": [calculator("17 x 25", "c1"), calculator("17*25", "c2"), "425"]}
        )
    )
    record = await evaluated(
        scripted_agent,
        {
            "name": "tool_failure",
            "prompt": "Evaluate '17 x 25' with the calculator exactly as written",
            "input": {"tools": ["calculator"]},
            "expect": {"answer_contains": "425", "tools_called": ["calculator"], "recovers": True},
        },
    )

    assert record.problems == []
    assert record.failures.tool_errors == 1
    assert record.tools == ["calculator", "calculator"]


async def test_a_cancel_after_n_steps_counts_the_steps_of_the_child_runs(
    scripted_agent: ScriptedHarness,
) -> None:
    # One tool step in each step's run: the person cancels after 2, while the second step's
    # write waits for approval. (A cancel that lands in the workflow task where a child run
    # ends is tests/test_child_cancel_race.py's case.)
    write = tool_calls(call("write_file", {"path": "eval-total.txt", "content": "425"}, id="w"))
    scripted_agent.model.set_handler(
        plan_script(
            {
                "Compute 17*25": [calculator("17*25", "c1"), "425"],
                "Add 1 to it and write that to eval-total.txt": [
                    calculator("425+1", "c2"),
                    write,
                    "written",
                ],
            }
        )
    )
    record = await evaluated(
        scripted_agent,
        {
            "name": "user_cancel",
            "prompt": "Compute 17 * 25, add 1, then write the result to eval-total.txt",
            "input": {"tools": ["calculator", "write_file"]},
            "people": [{"action": "cancel", "after_steps": 2}],
            "expect": {
                "ending": "cancelled",
                "tools_called": ["calculator"],
                "tools_not_called": ["write_file"],
                "max_steps": 2,
            },
        },
    )

    assert record.problems == [], record.problems  # before: "no end within 30 s", steps 0
    assert record.people == ["cancelled after 2 tool steps"]
    assert (record.steps, record.tools) == (2, ["calculator", "calculator"])
    assert record.ending == "cancelled"  # by the person, not the eval's end-of-run deadline
    assert not (scripted_agent.workspace / "eval-total.txt").exists()
