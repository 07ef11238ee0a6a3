"""`agent eval`'s scoring and report, without a server: expectations, cost, percentiles, the
failure-recovery rate, the summary, the table, the chart file, the history reading and the
scripted people's choice of who answers (cli/evaluation/scoring.py, report.py, runner.py)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from durable_agents.cli.evaluation import report
from durable_agents.cli.evaluation.run_tree import (
    ChildRun,
    children_of,
    has_ended,
    history_failures,
    history_latency,
    last_run_id,
)
from durable_agents.cli.evaluation.runner import (
    ScriptedPeople,
    model_slug,
    new_eval_id,
    plan_jobs,
)
from durable_agents.cli.evaluation.scoring import (
    Failures,
    RunRecord,
    check,
    cost_of,
    json_subset_problem,
    metrics,
    percentile,
    price_for,
    relabel_default,
    summarize,
)
from durable_agents.cli.evaluation.suite import Expectations, Scenario, Suite
from durable_agents.cli.evaluation.whole_run import RunPart, steps_of, whole_run
from durable_agents.contracts.agent_result import ModelCall, ModelFailure, ToolStep
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.budgets import ModelPrice
from durable_agents.contracts.usage import TokenUsage

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def record(**fields: Any) -> RunRecord:
    base: dict[str, Any] = {
        "scenario": "normal",
        "model": None,
        "label": "default",
        "repeat": 1,
        "workflow_id": "eval-x/normal/default/1",
        "ending": "completed",
        "stop_reason": "completed",
        "answer": "The answer is 425.",
        "steps": 1,
        "turns": 2,
        "tools": ["calculator"],
    }
    return RunRecord(**{**base, **fields})


def expect(**fields: Any) -> Expectations:
    return Expectations.model_validate(fields)


def scored(run: RunRecord, expectations: Expectations) -> RunRecord:
    return run.model_copy(update={"problems": check(expectations, run)})


# -- expectations ------------------------------------------------------------------------------


def test_a_run_that_meets_everything_has_no_problems() -> None:
    expectations = expect(
        answer_contains=["425", "ANSWER"],
        answer_matches=r"\b425\b",
        tools_called=["calculator"],
        tools_not_called=["write_file"],
        stop_reason=["completed", "stopped_by_tool"],
        max_steps=1,
        max_turns=2,
    )
    assert check(expectations, record()) == []


def test_each_unmet_expectation_is_one_line() -> None:
    expectations = expect(
        answer_contains="426",
        answer_matches="^Done",
        tools_called=["ask_user"],
        tools_not_called=["calculator"],
        stop_reason="max_iterations",
        max_steps=0,
        max_turns=1,
    )
    assert check(expectations, record()) == [
        "stop reason completed, expected max_iterations",
        "the answer does not contain '426': The answer is 425.",
        "the answer does not match /^Done/: The answer is 425.",
        "ask_user was not called (called: calculator)",
        "calculator was called",
        "1 tool steps, expected at most 0",
        "2 model turns, expected at most 1",
    ]


def test_the_ending_and_the_harness_error_count() -> None:
    cancelled = record(ending="cancelled", stop_reason=None, answer=None)
    assert check(expect(ending="cancelled"), cancelled) == []
    assert check(expect(), cancelled) == ["ended cancelled, expected completed"]
    failed = record(ending="failed", failure="InvalidAgentInput: unknown tool", answer=None)
    assert check(expect(), failed) == [
        "ended failed (InvalidAgentInput: unknown tool), expected completed"
    ]
    timed_out = record(ending="cancelled", error="no end within 2 s (agent eval cancelled the run)")
    assert check(expect(ending="cancelled"), timed_out) == [
        "no end within 2 s (agent eval cancelled the run)"
    ]


def test_output_is_a_json_subset() -> None:
    actual = {"total": 425, "items": [{"a": 1, "b": 2}], "note": "x", "ok": True}
    assert json_subset_problem({"total": 425}, actual) is None
    assert json_subset_problem({"items": [{"a": 1}]}, actual) is None
    assert json_subset_problem({}, actual) is None
    assert json_subset_problem({"total": 426}, actual) == "output.total is 425, expected 426"
    assert json_subset_problem({"missing": 1}, actual) == "output.missing is missing"
    assert json_subset_problem({"items": []}, actual) == (
        'output.items is [{"a": 1, "b": 2}], expected []'
    )
    assert json_subset_problem({"items": [{"a": 2}]}, actual) == (
        "output.items[0].a is 1, expected 2"
    )
    assert json_subset_problem({"ok": 1}, actual) == "output.ok is true, expected 1"
    assert json_subset_problem([1], {"a": 1}) == 'output is {"a": 1}, expected [1]'
    assert json_subset_problem({"a": 1}, None) == "output is null, expected an object"
    with_output = record(output={"total": 425})
    assert check(expect(output={"total": 425}), with_output) == []
    assert check(expect(output=None), with_output) == ['output is {"total": 425}, expected null']


# -- cost --------------------------------------------------------------------------------------

PRICES = {
    "gpt-4o-mini": ModelPrice(input_per_million=0.15, output_per_million=0.60),
    "big": ModelPrice(input_per_million=10, output_per_million=30),
}


def call(model: str, prompt: int, completion: int, failed: int = 0) -> ModelCall:
    return ModelCall(
        turn=1,
        purpose="turn",
        model=model,
        failed_models=[ModelFailure(model="other", error="503")] * failed,
        usage=TokenUsage(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
        ),
        tool_calls=0,
        finish_reason="stop",
        started_at=NOW,
        finished_at=NOW,
    )


def test_prices_by_name_prefix_or_star() -> None:
    assert price_for("gpt-4o-mini", PRICES) == PRICES["gpt-4o-mini"]
    assert price_for("openai/gpt-4o-mini", PRICES) == PRICES["gpt-4o-mini"]
    assert price_for("unknown", PRICES) is None
    star = {**PRICES, "*": ModelPrice(input_per_million=1, output_per_million=1)}
    assert price_for("unknown", star) == star["*"]
    assert price_for(None, PRICES) is None


def test_cost_is_each_call_at_the_price_of_the_model_that_answered() -> None:
    calls = [call("gpt-4o-mini", 1_000_000, 0), call("big", 0, 100_000)]
    usage = TokenUsage(prompt_tokens=1_000_000, completion_tokens=100_000, total_tokens=1_100_000)
    assert cost_of(calls, usage, "gpt-4o-mini", PRICES) == pytest.approx(0.15 + 3.0)
    assert cost_of([call("unpriced", 10, 10)], usage, "gpt-4o-mini", PRICES) is None
    assert cost_of([], usage, "big", PRICES) == pytest.approx(10 + 3)
    assert cost_of([], usage, None, PRICES) is None


# -- metrics -----------------------------------------------------------------------------------


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 95) == 3.0
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert percentile(range(1, 101), 95) == pytest.approx(95.05)
    assert percentile([1, 2], 100) == 2


def test_metrics_of_a_group() -> None:
    tool_error = Failures(tool_errors=1, activity_failures=1)
    records = [
        scored(record(usage=TokenUsage(total_tokens=100), cost_usd=0.01, latency_seconds=1.0,
                      steps=1, turns=2), expect()),
        scored(record(usage=TokenUsage(total_tokens=300), cost_usd=0.03, latency_seconds=3.0,
                      steps=3, turns=4, failures=tool_error), expect()),
        scored(record(usage=TokenUsage(total_tokens=200), cost_usd=None, latency_seconds=2.0,
                      steps=2, turns=3, failures=Failures(activity_retries=2)),
               expect(answer_contains="nope")),
    ]  # fmt: skip
    m = metrics(records)
    assert (m.runs, m.passed) == (3, 2)
    assert m.completion_rate == pytest.approx(2 / 3)
    assert (m.avg_steps, m.avg_turns, m.avg_tokens) == (2.0, 3.0, 200.0)
    assert m.avg_cost_usd == pytest.approx(0.02)
    assert m.priced_runs == 2
    assert m.latency_p50_seconds == 2.0
    assert m.latency_p95_seconds == pytest.approx(2.9)
    assert (m.failure_runs, m.recovered_runs) == (2, 1)
    assert m.failure_recovery_rate == 0.5


def test_failure_recovery_is_none_without_failures() -> None:
    m = metrics([record()])
    assert m.failure_runs == 0 and m.failure_recovery_rate is None
    assert report.recovery(m) == "–"
    empty = metrics([])
    assert empty.completion_rate is None and empty.avg_steps is None


def test_what_counts_as_a_failure() -> None:
    assert not Failures().occurred
    assert Failures(tool_errors=1).occurred
    assert Failures(failed_models=1).occurred
    assert Failures(activity_failures=1).occurred
    assert Failures(activity_retries=1).occurred


def test_summary_by_scenario_model_and_tag() -> None:
    records = relabel_default(
        [
            record(answered_by="demo-offline", tags=["seed"]),
            record(scenario="cancel", answered_by="demo-offline", tags=["seed", "human"]),
            record(model="gpt-x", label="gpt-x", answered_by="gpt-x", tags=["seed"]),
        ]
    )
    assert [r.label for r in records] == ["demo-offline", "demo-offline", "gpt-x"]
    summary = summarize(records)
    assert [(s.scenario, s.model, s.runs) for s in summary.by_scenario] == [
        ("normal", "demo-offline", 1),
        ("cancel", "demo-offline", 1),
        ("normal", "gpt-x", 1),
    ]
    assert list(summary.by_model) == ["demo-offline", "gpt-x"]
    assert summary.by_model["demo-offline"].runs == 2
    assert set(summary.by_tag) == {"seed", "human"}
    assert list(summary.by_tag["human"]) == ["demo-offline"]


def test_the_default_model_keeps_its_name_when_answers_differ_or_clash() -> None:
    mixed = relabel_default([record(answered_by="a"), record(answered_by="b")])
    assert {r.label for r in mixed} == {"default"}
    clash = relabel_default(
        [record(answered_by="gpt-x"), record(model="gpt-x", label="gpt-x", answered_by="gpt-x")]
    )
    assert [r.label for r in clash] == ["gpt-x (default)", "gpt-x"]


# -- report ------------------------------------------------------------------------------------


def test_table_headline_and_problem_lines() -> None:
    records = [
        scored(record(label="demo", usage=TokenUsage(total_tokens=39), cost_usd=0.0,
                      latency_seconds=0.25), expect()),
        scored(record(label="demo", scenario="tool_failure", usage=TokenUsage(total_tokens=100),
                      cost_usd=0.0, latency_seconds=0.5, failures=Failures(tool_errors=1)),
               expect(answer_contains="426")),
    ]  # fmt: skip
    summary = summarize(records)
    lines = report.table_lines(summary)
    assert lines[0].split() == [
        "scenario", "model", "passed", "completion", "recovery", "avg", "steps", "avg", "turns",
        "avg", "tokens", "avg", "cost", "p50", "s", "p95", "s",
    ]  # fmt: skip
    assert set(lines[1]) == {"-"} and set(lines[-2]) == {"-"}
    assert lines[2].split() == ["normal", "demo", "1/1", "100%", "–", "1.0", "2.0", "39",
                                "$0.0000", "0.25", "0.25"]  # fmt: skip
    assert lines[3].split()[:5] == ["tool_failure", "demo", "0/1", "0%", "0%"]
    assert lines[-1].split()[:6] == ["all", "demo", "1/2", "50%", "0%", "(0/1)"]
    assert report.headline_lines(summary) == [
        "demo: completion rate 50% (1/2) · avg steps 1.0 · avg tokens 70 · failure recovery "
        "0% (0/1) · avg cost $0.0000 · latency p50 0.38 s, p95 0.49 s"
    ]
    assert report.problem_lines(records) == [
        "✗ tool_failure · demo #1  (eval-x/normal/default/1)",
        "    the answer does not contain '426': The answer is 425.",
    ]
    assert report.run_line(records[0]) == "✓ normal · worker default #1 · completed · 0.25 s"


def test_numbers_as_text() -> None:
    assert report.percent(None) == "–" and report.percent(0.5) == "50%"
    assert report.dollars(None) == "n/a" and report.dollars(0.00012) == "$0.0001"
    assert report.dollars(1234.5) == "$1,234.50"
    assert report.number(1234.56, 1) == "1,234.6"


def test_the_chart_is_a_png(tmp_path: Path) -> None:
    records = [
        scored(record(label="a", cost_usd=0.002), expect()),
        scored(record(label="b", cost_usd=None), expect(answer_contains="x")),
        scored(record(label="b", scenario="other", cost_usd=None), expect()),
    ]
    path = tmp_path / "chart.png"
    report.write_chart(path, summarize(records), "test chart")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.width >= 800 and image.height >= 400


# -- runner pieces -----------------------------------------------------------------------------


def test_eval_ids_and_workflow_ids() -> None:
    eval_id = new_eval_id(NOW)
    assert re.fullmatch(r"eval-20261130T120000Z-[0-9a-f]{6}", eval_id)
    assert new_eval_id(NOW) != eval_id
    assert model_slug(None) == "default"
    assert model_slug("openai/gpt-4o mini") == "openai:gpt-4o_mini"
    suite = Suite.model_validate(
        {
            "name": "s",
            "repeat": 2,
            "timeout_seconds": 30,
            "scenarios": [
                {"name": "a", "prompt": "p"},
                {"name": "b", "prompt": "q", "repeat": 1, "timeout_seconds": 5},
            ],
        }
    )
    jobs = plan_jobs(suite, suite.scenarios, [None, "m/x"], eval_id)
    assert [j.workflow_id.removeprefix(eval_id) for j in jobs] == [
        "/a/default/1",
        "/a/m:x/1",
        "/a/default/2",
        "/a/m:x/2",
        "/b/default/1",
        "/b/m:x/1",
    ]
    assert jobs[1].payload == {"prompt": "p", "model": "m/x"}
    assert [j.timeout_seconds for j in jobs] == [30, 30, 30, 30, 5, 5]
    assert len(plan_jobs(suite, suite.scenarios, [None], eval_id, repeat=3)) == 6


def event(kind: EventType.ValueType, seconds: int, attempt: int = 1) -> HistoryEvent:
    item = HistoryEvent(event_type=kind)
    item.event_time.FromSeconds(1_800_000_000 + seconds)
    if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        item.activity_task_started_event_attributes.attempt = attempt
    return item


def test_failures_and_latency_from_history() -> None:
    events = [
        event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0),
        event(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED, 1, attempt=3),
        event(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, 1),
        event(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED, 2),
        event(EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED, 2),
        event(EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, 3),
        event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, 4),
    ]
    assert history_failures(events) == (2, 2)
    # A local activity (a `local=True` tool) is one marker: failed after its second attempt.
    local = event(EventType.EVENT_TYPE_MARKER_RECORDED, 3)
    marker = local.marker_recorded_event_attributes
    marker.marker_name = "core_local_activity"
    marker.details["data"].payloads.add(data=b'{"attempt": 2, "activity_type": "calculator"}')
    marker.failure.message = "division by zero"
    patch = event(EventType.EVENT_TYPE_MARKER_RECORDED, 3)
    patch.marker_recorded_event_attributes.marker_name = "core_patch"
    assert history_failures([*events, local, patch]) == (3, 3)
    assert history_latency(events) == 4.0
    assert history_latency([]) is None


def tool_step(tool: str, second: int, status: str = "ok") -> ToolStep:
    at = NOW + timedelta(seconds=second)
    return ToolStep(
        iteration=1, call_id=f"c{second}", tool=tool, raw_arguments="{}", args={},
        observation="x", status=status, started_at=at, finished_at=at,
    )  # fmt: skip


def test_the_whole_run_is_the_run_and_its_child_runs() -> None:
    parent = RunPart(
        workflow_id="r", steps=1, turns=2, known_steps=[tool_step("write_file", 9)],
        activity_retries=1,
    )  # fmt: skip
    step_1 = RunPart(
        workflow_id="r/step-1", steps=2, turns=3, failed_models=1, activity_failures=1,
        known_steps=[tool_step("calculator", 2, "error"), tool_step("calculator", 3)],
    )  # fmt: skip
    step_2 = RunPart(
        workflow_id="r/step-2", steps=1, turns=1, known_steps=[tool_step("weather", 5)]
    )

    whole = whole_run([parent, step_1, step_2])
    assert (whole.steps, whole.turns) == (4, 6) and steps_of([parent, step_1, step_2]) == 4
    assert whole.tools == ["calculator", "calculator", "weather", "write_file"]  # as they started
    assert whole.failures == Failures(
        tool_errors=1, failed_models=1, activity_failures=1, activity_retries=1
    )
    assert whole_run([parent]).failures.occurred and not whole_run([step_2]).failures.occurred


def test_child_runs_and_the_last_run_of_a_chain_from_history() -> None:
    started = [event(EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, n) for n in (1, 2)]
    for item, run_id in zip(started, "ab", strict=True):
        execution = item.child_workflow_execution_started_event_attributes.workflow_execution
        execution.workflow_id, execution.run_id = "r/step-1", run_id
    other = event(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED, 1)
    # a step run again under the same id (after a replan) is a child run of its own
    assert children_of([other, *started]) == [ChildRun("r/step-1", "a"), ChildRun("r/step-1", "b")]
    continued = event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, 3)
    continued.workflow_execution_continued_as_new_event_attributes.new_execution_run_id = "z"
    assert last_run_id("a", started) == "a" and last_run_id("a", [*started, continued]) == "z"
    closed = event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, 4)
    assert not has_ended([*started, continued]) and has_ended([*started, closed])
    assert not has_ended([])


def pending(call_id: str, tool: str = "write_file", kind: str = "approval") -> PendingRequest:
    return PendingRequest.model_validate(
        {
            "kind": kind,
            "call_id": call_id,
            "tool": tool,
            "args": {},
            "args_digest": "x",
            "requested_at": NOW,
            "command": "",
        }
    )


def test_the_first_matching_person_with_uses_left_answers() -> None:
    scenario = Scenario.model_validate(
        {
            "name": "a",
            "prompt": "p",
            "people": [
                {"action": "reject", "tool": "write_file", "times": 1, "reason": "no"},
                {"action": "approve", "tool": "write_file"},
                {"action": "reply", "text": "blue"},
                {"action": "cancel", "after_steps": 3},
            ],
        }
    )
    people = ScriptedPeople(handle=None, scenario=scenario)  # type: ignore[arg-type]
    chosen = [
        people._person_for(pending("1")),
        people._person_for(pending("2")),
        people._person_for(pending("3")),
        people._person_for(pending("4", tool="ask_user", kind="question")),
        people._person_for(pending("5", tool="delete_file")),
    ]
    assert [p.action if p else None for p in chosen] == [
        "reject",
        "approve",
        "approve",
        "reply",
        None,
    ]
