"""References between plan steps: a tool action's arguments built from earlier results.

The syntax is `${steps.<n>.result}` (`contracts.plan.REFERENCE`), n being the step's number in
the plan (from 1; a revision's steps are numbered after the steps already done). It is checked
when the plan is made (`plan_problems`: a reference must name a step that runs before, a tool
action must name one of the run's tools, the answer template's references must name steps of
the plan) and put in when the step runs (`resolve_args`) or the answer is filled (`put_in`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from durable_agents.contracts.plan import (
    OPENING,
    REFERENCE,
    PlanState,
    PlanStep,
    answer_problems,
    reference_problems,
)


class MissingResult(ValueError):
    """A reference names a step that has no result (it failed, or has not run)."""


def plan_problems(
    steps: Sequence[PlanStep], first: int, tools: Collection[str], answer: str | None = None
) -> list[str]:
    """Why the plan's steps (numbered from `first`) cannot run as written, or nothing: a
    reference that does not look back, a tool action naming a tool the run does not have, an
    answer template naming a step the plan does not have."""
    problems = []
    for number, step in enumerate(steps, start=first):
        if step.tool is not None and step.tool not in tools:
            known = ", ".join(sorted(tools)) or "none"
            problems.append(f"step {number}: unknown tool {step.tool!r} (the run's tools: {known})")
    last = first + len(steps) - 1
    return problems + reference_problems(steps, first) + answer_problems(answer, last)


def step_results(state: PlanState) -> dict[int, str]:
    """Each done step's result, by step number (a step done is never run again)."""
    return {o.index: o.answer for o in state.outcomes if o.status == "done"}


def resolve_args(args: Mapping[str, Any], results: Mapping[int, str]) -> dict[str, Any]:
    """`args` with every reference put in (raises `MissingResult` for a step without one)."""
    return {key: _resolve(item, results) for key, item in args.items()}


def _resolve(value: Any, results: Mapping[int, str]) -> Any:
    if isinstance(value, dict):
        return {key: _resolve(item, results) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, results) for item in value]
    if not isinstance(value, str) or not OPENING.search(value):
        return value
    whole = REFERENCE.fullmatch(value)
    if whole is not None:
        return _as_value(_result(int(whole.group(1)), results))
    return put_in(value, results)


def put_in(text: str, results: Mapping[int, str]) -> str:
    """`text` with each reference replaced by that step's result, as text (raises
    `MissingResult` for a step without one)."""
    return REFERENCE.sub(lambda found: _result(int(found.group(1)), results), text)


def _result(number: int, results: Mapping[int, str]) -> str:
    if number not in results:
        raise MissingResult(
            f"step {number} has no result to use (it failed or did not run): "
            f"${{steps.{number}.result}} cannot be put in"
        )
    return results[number]


def _as_value(text: str) -> Any:
    """A result used as a whole argument: its JSON value when it is JSON, else the text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
