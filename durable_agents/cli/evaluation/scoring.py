"""Scoring of `agent eval`: pure functions, no I/O.

A finished run becomes a `RunRecord` (what the results, `status` queries and histories of the
run and its child runs said: `whole_run`). `check` compares it with the scenario's
`Expectations`; `metrics` sums a group of records into the numbers the report shows:

- completion rate: the share of runs that met every expectation;
- average tool steps, model turns, tokens and cost per run;
- latency p50 / p95 (seconds from the run's start to its end, on the server's clock);
- failure-recovery rate: among the runs in which a tool or the model failed at least once (a
  step with status "error", a model given up for a fallback, a failed, timed out or retried
  activity in the history), the share that still met every expectation.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from durable_agents.cli.evaluation.suite import Ending, Expectations
from durable_agents.contracts.agent_result import ModelCall, StopReason, ToolStep
from durable_agents.contracts.budgets import ModelPrice
from durable_agents.contracts.tool_fixtures import NEW_TOOL_CALL
from durable_agents.contracts.usage import TokenUsage


class Failures(BaseModel):
    """What failed during one run (before it ended, whether or not it recovered)."""

    tool_errors: int = Field(default=0, description="Tool steps with status 'error'.")
    failed_models: int = Field(default=0, description="Models given up on for a fallback.")
    activity_failures: int = Field(
        default=0,
        description=(
            "ActivityTaskFailed / ActivityTaskTimedOut events in history, and failed local "
            "activities (their marker's failure)."
        ),
    )
    activity_retries: int = Field(
        default=0, description="Activity attempts that were retried (attempt > 1 in history)."
    )

    @property
    def occurred(self) -> bool:
        counts = (self.tool_errors, self.failed_models, self.activity_failures)
        return any(counts) or self.activity_retries > 0


class NewToolCall(BaseModel):
    """A call a rerun of a recorded run made that the recording has no output for (answered
    with a `new tool call` error observation, not run)."""

    tool: str
    args: dict[str, Any] | None


def new_tool_calls(steps: Sequence[ToolStep]) -> list[NewToolCall]:
    """The calls of `steps` that a run replaying recorded outputs did not run (none when the run
    replayed nothing: the observation is the fixture host's alone)."""
    marker = f"Error: {NEW_TOOL_CALL}: "
    return [NewToolCall(tool=s.tool, args=s.args) for s in steps if marker in s.observation]


class RunRecord(BaseModel):
    """One run of one scenario with one model, as read back from Temporal, and its verdict."""

    scenario: str
    tags: list[str] = []
    model: str | None = Field(description="The model asked for; None: the worker's default.")
    label: str = Field(description="The model as the report names it.")
    repeat: int = Field(description="Which run of this scenario and model (1, 2, ...).")
    workflow_id: str
    run_id: str | None = None
    ending: Ending
    failure: str | None = Field(default=None, description="Why a run failed (type: message).")
    stop_reason: StopReason | None = None
    answer: str | None = None
    answers: list[str] = Field(default=[], description="A session's answers, turn by turn.")
    output: Any = None
    answered_by: str | None = Field(default=None, description="The model that answered.")
    steps: int = 0
    turns: int = 0
    tools: list[str] = Field(default=[], description="Tools called, in order.")
    new_calls: list[NewToolCall] = Field(
        default=[], description="Calls no recorded output answered (a run replaying one)."
    )
    usage: TokenUsage = TokenUsage()
    cost_usd: float | None = None
    latency_seconds: float | None = None
    failures: Failures = Failures()
    people: list[str] = Field(default=[], description="What the scripted people did.")
    error: str | None = Field(default=None, description="Why the run did not end as it should.")
    problems: list[str] = Field(default=[], description="Expectations not met.")

    @property
    def passed(self) -> bool:
        return not self.problems


# -- expectations ------------------------------------------------------------------------------


def json_subset_problem(expected: Any, actual: Any, where: str = "output") -> str | None:
    """None when `actual` contains `expected`: objects may have more keys, lists must have the
    same length (each item a subset), anything else must be equal. Else where it differs."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{where} is {_json(actual)}, expected an object"
        for key, value in expected.items():
            if key not in actual:
                return f"{where}.{key} is missing"
            problem = json_subset_problem(value, actual[key], f"{where}.{key}")
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{where} is {_json(actual)}, expected {_json(expected)}"
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            problem = json_subset_problem(want, got, f"{where}[{index}]")
            if problem:
                return problem
        return None
    if expected != actual or isinstance(expected, bool) != isinstance(actual, bool):
        return f"{where} is {_json(actual)}, expected {_json(expected)}"
    return None


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    return _short(json.dumps(value, ensure_ascii=False, default=str))


def check(expect: Expectations, run: RunRecord) -> list[str]:
    """The expectations `run` does not meet, one line each (empty: it passed)."""
    problems = []
    if run.error:
        problems.append(run.error)
    if run.ending != expect.ending:
        why = f" ({_short(run.failure, 200)})" if run.failure else ""
        problems.append(f"ended {run.ending}{why}, expected {expect.ending}")
    if expect.stop_reason is not None and run.stop_reason not in expect.stop_reason:
        wanted = " or ".join(expect.stop_reason)
        problems.append(f"stop reason {run.stop_reason or 'none'}, expected {wanted}")
    answer = run.answer or ""
    for text in expect.answer_contains:
        if text.lower() not in answer.lower():
            problems.append(f"the answer does not contain {text!r}: {_short(answer)}")
    if expect.answer_matches is not None and not re.search(expect.answer_matches, answer):
        problems.append(f"the answer does not match /{expect.answer_matches}/: {_short(answer)}")
    if expect.checks_output:
        problem = json_subset_problem(expect.output, run.output)
        if problem:
            problems.append(problem)
    for tool in expect.tools_called:
        if tool not in run.tools:
            problems.append(f"{tool} was not called (called: {', '.join(run.tools) or 'none'})")
    for tool in expect.tools_not_called:
        if tool in run.tools:
            problems.append(f"{tool} was called")
    if expect.max_steps is not None and run.steps > expect.max_steps:
        problems.append(f"{run.steps} tool steps, expected at most {expect.max_steps}")
    if expect.max_turns is not None and run.turns > expect.max_turns:
        problems.append(f"{run.turns} model turns, expected at most {expect.max_turns}")
    if expect.recovers and not run.failures.occurred:
        problems.append("nothing failed, so nothing was recovered from (expected: recovers)")
    return problems


# -- cost --------------------------------------------------------------------------------------


def price_for(model: str | None, prices: dict[str, ModelPrice]) -> ModelPrice | None:
    """The price of `model`: by its name, by its name without a `provider/` prefix, or '*'."""
    if model is not None:
        if model in prices:
            return prices[model]
        bare = model.split("/", 1)[-1]
        if bare in prices:
            return prices[bare]
    return prices.get("*")


def _priced(usage: TokenUsage, price: ModelPrice) -> float:
    return (
        usage.prompt_tokens * price.input_per_million
        + usage.completion_tokens * price.output_per_million
    ) / 1_000_000


def cost_of(
    model_calls: Sequence[ModelCall],
    usage: TokenUsage,
    model: str | None,
    prices: dict[str, ModelPrice],
) -> float | None:
    """US dollars the run cost: each model call at the price of the model that answered it
    (or, without model calls, the whole usage at `model`'s price); None if a price is missing."""
    if not model_calls:
        price = price_for(model, prices)
        return _priced(usage, price) if price is not None else None
    total = 0.0
    for call in model_calls:
        price = price_for(call.model, prices)
        if price is None:
            return None
        total += _priced(call.usage, price)
    return total


# -- metrics -----------------------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation between ranks (numpy's default);
    None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


class Metrics(BaseModel):
    """The numbers of a group of runs (a scenario with a model, a model overall, a tag)."""

    runs: int
    passed: int
    completion_rate: float | None
    avg_steps: float | None
    avg_turns: float | None
    avg_tokens: float | None
    prompt_cache_share: float | None = Field(
        default=None,
        description="Of the prompt tokens, the share the provider served from its prompt "
        "cache (None: no prompt tokens).",
    )
    avg_cost_usd: float | None = Field(description="Over the runs whose cost is known.")
    priced_runs: int
    latency_p50_seconds: float | None
    latency_p95_seconds: float | None
    failure_runs: int = Field(description="Runs in which a tool or the model failed.")
    recovered_runs: int = Field(description="Of those, the runs that met every expectation.")
    failure_recovery_rate: float | None = Field(description="None when nothing failed.")


def metrics(records: Sequence[RunRecord]) -> Metrics:
    """Completion rate, averages, latency percentiles and failure recovery of `records`."""
    runs = len(records)
    passed = sum(r.passed for r in records)
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    latencies = [r.latency_seconds for r in records if r.latency_seconds is not None]
    failed = [r for r in records if r.failures.occurred]
    recovered = sum(r.passed for r in failed)
    return Metrics(
        runs=runs,
        passed=passed,
        completion_rate=passed / runs if runs else None,
        avg_steps=_mean([r.steps for r in records]),
        avg_turns=_mean([r.turns for r in records]),
        avg_tokens=_mean([r.usage.total_tokens for r in records]),
        prompt_cache_share=sum((r.usage for r in records), TokenUsage()).cache_share,
        avg_cost_usd=_mean(costs),
        priced_runs=len(costs),
        latency_p50_seconds=percentile(latencies, 50),
        latency_p95_seconds=percentile(latencies, 95),
        failure_runs=len(failed),
        recovered_runs=recovered,
        failure_recovery_rate=recovered / len(failed) if failed else None,
    )


def grouped(
    records: Sequence[RunRecord], key: Callable[[RunRecord], str]
) -> dict[str, list[RunRecord]]:
    """Records by `key`, in the order the keys first appear."""
    groups: dict[str, list[RunRecord]] = {}
    for record in records:
        groups.setdefault(key(record), []).append(record)
    return groups


class ScenarioMetrics(Metrics):
    scenario: str
    model: str


class Summary(BaseModel):
    """Every number of an evaluation: per scenario and model, per model, per tag and model."""

    by_scenario: list[ScenarioMetrics]
    by_model: dict[str, Metrics]
    by_tag: dict[str, dict[str, Metrics]]


def summarize(records: Sequence[RunRecord]) -> Summary:
    by_scenario = [
        ScenarioMetrics(
            scenario=group[0].scenario, model=group[0].label, **metrics(group).model_dump()
        )
        for group in grouped(records, lambda r: f"{r.scenario}\0{r.label}").values()
    ]
    by_model = {label: metrics(group) for label, group in grouped(records, _label).items()}
    tags = sorted({t for r in records for t in r.tags})
    by_tag = {
        tag: {
            label: metrics(group)
            for label, group in grouped([r for r in records if tag in r.tags], _label).items()
        }
        for tag in tags
    }
    return Summary(by_scenario=by_scenario, by_model=by_model, by_tag=by_tag)


def _label(record: RunRecord) -> str:
    return record.label


def relabel_default(records: Sequence[RunRecord], default: str = "default") -> list[RunRecord]:
    """Runs of the worker's default model (no model asked for) are named after the model that
    answered them, when it is one model; else `default`."""
    answered = {r.answered_by for r in records if r.model is None and r.answered_by}
    name = answered.pop() if len(answered) == 1 else default
    taken = {r.label for r in records if r.model is not None}
    if name in taken:
        name = f"{name} (default)"
    return [r.model_copy(update={"label": name}) if r.model is None else r for r in records]
