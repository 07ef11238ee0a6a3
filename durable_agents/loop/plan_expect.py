"""Whether a plan step's result meets the expectation its planner stated (`expect`).

The plain checks are comparisons: `equals` (numbers compare as numbers), `contains` (any case),
`matches` (a wildcard pattern: `*`, `?`; not a regular expression, which could backtrack for
minutes inside workflow code on a planner's pattern), `min` / `max` (the result as a number:
the whole text, or the one number in it). They decide alone, with no model call. `check`, a
statement in words, is the only one a comparison cannot decide: it is asked of the model
(`check_request`, answered through `report_check`), and only once every plain check given has
passed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from pydantic import ValidationError

from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import ToolSchema
from durable_agents.contracts.plan import CheckVerdict, PlanState, StepExpectation
from durable_agents.loop.plan import RESULT_CHARS, plan_view
from durable_agents.loop.plan_schema import model_parameters
from durable_agents.loop.summaries import shorten
from durable_agents.loop.validation_errors import describe_validation_error

CHECK_TOOL = "report_check"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Verdict:
    """Whether the result meets the expectation, and why (shown in the step's outcome)."""

    met: bool
    why: str

    def describe(self) -> str:
        return f"{'met' if self.met else 'missed'}: {self.why}"


def as_number(text: str) -> float | None:
    """The result as a number: the whole text, else the only number in it, else None."""
    try:
        return float(text.strip())
    except ValueError:
        found = _NUMBER.findall(text)
        return float(found[0]) if len(found) == 1 else None


def wildcard_match(pattern: str, text: str) -> bool:
    """Whether all of `text` matches `pattern` (`*`: any run of characters, `?`: one), any case.
    Greedy with one backtrack point: at most len(pattern) * len(text) steps, whatever the
    pattern."""
    pattern, text = pattern.lower(), text.lower()
    p = t = 0
    star, resume = -1, 0
    while t < len(text):
        if p < len(pattern) and pattern[p] == "*":
            star, resume = p, t
            p += 1
        elif p < len(pattern) and pattern[p] in ("?", text[t]):
            p, t = p + 1, t + 1
        elif star >= 0:
            p, resume = star + 1, resume + 1
            t = resume
        else:
            return False
    return all(c == "*" for c in pattern[p:])


def plain_verdict(expect: StepExpectation, result: str) -> Verdict | None:
    """The plain checks' verdict (the first one missed, or all met); None when they pass and
    only `check` is left, which takes a model call."""
    text = result.strip()
    passed: list[str] = []
    if expect.equals is not None:
        wanted = expect.equals
        number = as_number(text) if isinstance(wanted, float) else None
        same = (
            number is not None and math.isclose(number, float(wanted), rel_tol=1e-9)
            if isinstance(wanted, float)
            else text == wanted.strip()
        )
        shown = f"{wanted:g}" if isinstance(wanted, float) else repr(wanted)
        if not same:
            return Verdict(False, f"the result {shorten(text, 200)!r} is not {shown}")
        passed.append(f"equals {shown}")
    if expect.contains is not None:
        if expect.contains.lower() not in text.lower():
            return Verdict(False, f"the result does not contain {expect.contains!r}")
        passed.append(f"contains {expect.contains!r}")
    if expect.matches is not None:
        if not wildcard_match(expect.matches, text):
            return Verdict(False, f"the result does not match {expect.matches!r}")
        passed.append(f"matches {expect.matches!r}")
    if expect.min is not None or expect.max is not None:
        number = as_number(text)
        if number is None:
            return Verdict(False, f"the result {shorten(text, 200)!r} is not a number")
        if expect.min is not None and number < expect.min:
            return Verdict(False, f"{number:g} is less than {expect.min:g}")
        if expect.max is not None and number > expect.max:
            return Verdict(False, f"{number:g} is more than {expect.max:g}")
        passed.append(f"{number:g} within bounds")
    if expect.check is not None:
        return None
    return Verdict(True, ", ".join(passed))


def check_tool() -> ToolSchema:
    """The tool the checking call answers with."""
    parameters = model_parameters(CheckVerdict)
    return ToolSchema(
        name=CHECK_TOOL,
        description="Report whether the step's result meets its expectation.",
        parameters=parameters,
    )


def check_request(prompt: str, state: PlanState, index: int, result: str) -> list[ChatMessage]:
    """Messages asking whether step `index`'s result meets its `check` (in words)."""
    step = state.steps[index]
    expected = step.expect.check if step.expect is not None else None
    lines = [
        f"Request: {prompt}",
        "",
        plan_view(state, index),
        "",
        f"Step {index + 1}: {step.goal}",
        f"Its result: {shorten(result, RESULT_CHARS)}",
        f"Expected: {expected}",
        "",
        "Does the result meet the expectation? Answer by calling report_check.",
    ]
    return [
        ChatMessage.system(
            "You check one step of an AI agent's plan: whether its result meets what the plan "
            "expected of it."
        ),
        ChatMessage.user("\n".join(lines)),
    ]


def read_check(arguments: str) -> Verdict | str:
    """The verdict in a `report_check` call's arguments, or why it is not one."""
    try:
        verdict = CheckVerdict.model_validate(json.loads(arguments or "{}"))
    except json.JSONDecodeError as error:
        return f"the check is not valid JSON ({error.msg})"
    except ValidationError as error:
        return f"the check is invalid: {describe_validation_error(error)}"
    return Verdict(verdict.met, f"checked by the model: {verdict.reason or 'no reason given'}")
