"""Plan-and-execute: the typed plan a planning call returns, how each step ended, and what a
run in that mode reports.

A step is one of two kinds:
- a **goal** that needs reasoning (`{"goal": "...", "tools"?: [...]}`): a child ReAct run;
- a **tool action** (`{"tool": "calculator", "args": {...}, "goal"?: "..."}`): the engine runs
  the call itself, with no model call. Its string arguments may use the results of the steps
  before it: `${steps.<n>.result}` (see `loop.plan_refs`).

Either kind may state what its result should be (`expect`), which is checked before the plan
goes on (see `loop.plan_expect`). The plan may state its final answer as a template over the
steps' results (`answer`, the same references): filled in, it is the answer when every step was
a tool action that succeeded, with no synthesis call (see `loop.plan_answer`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from durable_agents.contracts.omitted import default_omitted, empty_omitted, none_omitted
from durable_agents.contracts.stop_reason import StopReason

PlanStepStatus = Literal["pending", "running", "done", "failed"]

MAX_GOAL_CHARS = 2_000
MAX_ANSWER_CHARS = 4_000
REFERENCE = re.compile(r"\$\{steps\.([0-9]{1,9})\.result\}")
"""`${steps.<n>.result}`: the result of step n (its number in the plan, from 1), inside a tool
action's string argument. A string that is only a reference takes the result's JSON value when
the result is JSON (`425` -> 425), else its text; inside longer text, the text is put in. (At
most 9 digits: a longer number is no step of any plan, and Python refuses to read one of more
than 4300 digits as an int, which would fail the workflow task that checks a planner's plan.)"""
OPENING = re.compile(r"\$\{[^}]*\}?")
"""Anything that starts like a reference (`${...`): each must be a valid `REFERENCE`."""


def reference_problems(steps: Sequence[PlanStep], first: int = 1) -> list[str]:
    """What is wrong with the references of `steps`, numbered from `first` (a revision's steps
    follow the steps already done): each names the step, the argument and the reference. A step
    may use the results of the steps before it only."""
    problems = []
    for number, step in enumerate(steps, start=first):
        for where, text in _strings(step.args or {}, "args"):
            for shown, named in _references(text):
                if named is None:
                    problems.append(f"step {number}: {where}: {_not_a_reference(shown)}")
                elif not 1 <= named < number:
                    problems.append(
                        f"step {number}: {where}: {shown} names step {named}, which does "
                        f"not run before step {number}; a step may use only the results of "
                        f"steps 1 to {number - 1}"
                        if number > 1
                        else f"step 1: {where}: {shown}: the first step has no earlier results"
                    )
    return problems


def answer_problems(answer: str | None, last: int) -> list[str]:
    """What is wrong with the references of a plan's answer template, the plan's steps being
    numbered 1 to `last` (the steps done included): each must name one of them."""
    problems = []
    for shown, named in _references(answer or ""):
        if named is None:
            problems.append(f"answer: {_not_a_reference(shown)}")
        elif not 1 <= named <= last:
            problems.append(f"answer: {shown} names step {named}; the plan has steps 1 to {last}")
    return problems


def _references(text: str) -> Iterator[tuple[str, int | None]]:
    """Everything in `text` that starts like a reference: its text, and the step it names
    (None: it is not a valid reference)."""
    for found in OPENING.finditer(text):
        ref = REFERENCE.fullmatch(found.group(0))
        yield found.group(0), int(ref.group(1)) if ref is not None else None


def _not_a_reference(shown: str) -> str:
    return (
        f"{shown!r} is not a reference; write ${{steps.<n>.result}} "
        "(n: the number of an earlier step)"
    )


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every string inside `value` (JSON data), with its path (`args.items.0`)."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}.{i}")


class StepExpectation(BaseModel):
    """What a step's result should be. The plain checks (`equals`, `contains`, `matches`,
    `min` / `max`) are decided by comparison; `check`, a statement in words, is the only one
    that takes a model call, and only once every plain check given has passed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    equals: str | float | None = Field(
        default=None, description="The result is exactly this (numbers compare as numbers)."
    )
    contains: str | None = Field(
        default=None, min_length=1, description="The result contains this text (any case)."
    )
    matches: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="A wildcard pattern the whole result matches, any case: `*` any text, `?` "
        "one character (e.g. `*paid*`, `order #*`).",
    )
    min: float | None = Field(default=None, description="The result is a number at least this.")
    max: float | None = Field(default=None, description="The result is a number at most this.")
    check: str | None = Field(
        default=None,
        min_length=1,
        max_length=1_000,
        description="A statement in words the result must satisfy (checked by a model call).",
    )

    @model_validator(mode="after")
    def _usable(self) -> StepExpectation:
        if not any(v is not None for v in self.model_dump().values()):
            raise ValueError(
                "an expectation needs at least one of equals, contains, matches, min, max, check"
            )
        return self


class PlanStep(BaseModel):
    """One step of a plan: a goal that needs reasoning, or a tool action the engine runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    goal: str = Field(
        min_length=1,
        max_length=MAX_GOAL_CHARS,
        description="What this step achieves (for a tool action: optional, what it is for).",
    )
    tools: list[str] | None = Field(
        default=None,
        description="Goal steps: tools the step expects to use; unset: any of the run's.",
    )
    tool: str | None = none_omitted(
        min_length=1,
        description="A tool action: the tool the engine calls directly, with `args`, and no "
        "model call.",
    )
    args: dict[str, Any] | None = none_omitted(
        description="A tool action's arguments. A string may use an earlier step's result: "
        "${steps.<n>.result} (n: that step's number).",
    )
    expect: StepExpectation | None = none_omitted(
        description="What the result should be; a result that misses it revises the plan."
    )

    @model_validator(mode="before")
    @classmethod
    def _a_goal_for_every_step(cls, data: Any) -> Any:
        """A tool action may leave out its goal: it is then the call itself."""
        if isinstance(data, dict) and data.get("tool") and not data.get("goal"):
            args = data.get("args")
            label = f"{data['tool']} {json.dumps(args, ensure_ascii=False) if args else '{}'}"
            return {**data, "goal": label[:MAX_GOAL_CHARS]}
        return data

    @model_validator(mode="after")
    def _one_kind(self) -> PlanStep:
        if self.tool is None and self.args is not None:
            raise ValueError("args: only a tool action (a step with `tool`) takes args")
        if self.tool is not None and self.tools is not None:
            raise ValueError("tools: a tool action names its one `tool`; `tools` is for goal steps")
        return self

    @property
    def is_action(self) -> bool:
        """A tool action (run by the engine), not a goal (run by a child ReAct loop)."""
        return self.tool is not None


class Plan(BaseModel):
    """Steps in order, and perhaps the answer as a template over their results. Also the input
    of the `edit_plan` update (with an optional `by`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: list[PlanStep] = Field(min_length=1, max_length=20)
    answer: str | None = none_omitted(
        min_length=1,
        max_length=MAX_ANSWER_CHARS,
        description="The final answer as a template over the steps' results "
        "(${steps.<n>.result}), when writing it needs no reasoning. Used as written when every "
        "step is a tool action that succeeds; otherwise a model writes the answer.",
    )


class EditPlan(Plan):
    """Update `edit_plan`: `{"steps": [{"goal": "..."}], "answer"?: "...", "by"?: "..."}`
    replaces the plan waiting for approval and approves it (refused, naming the step, if a
    reference names a step that does not run before it, or the answer's a step not in it)."""

    by: str | None = None

    @model_validator(mode="after")
    def _references_look_back(self) -> EditPlan:
        problems = reference_problems(self.steps) + answer_problems(self.answer, len(self.steps))
        if problems:
            raise ValueError("; ".join(problems))
        return self


class StepOutcome(BaseModel):
    """How one executed step ended: its run (a child workflow) or its tool call, and its
    result."""

    index: int
    goal: str
    status: PlanStepStatus
    answer: str = ""
    workflow_id: str | None = None
    stop_reason: StopReason | None = none_omitted()
    """Why the step's run stopped (None: it failed, or was recorded before this was kept)."""
    call_id: str | None = none_omitted()
    """A tool action: the id of its call (its step in the result's `steps`)."""
    model_calls: int = default_omitted(0)
    """Model calls the step made (its child run's turns; a tool action makes none)."""
    expectation: str | None = none_omitted()
    """How the step's `expect` was checked: `met: ...` or `missed: ...` (None: none stated)."""


class CheckVerdict(BaseModel):
    """What a model call checking a step's expectation in words answers (`report_check`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    met: bool = Field(description="Whether the result meets the expectation.")
    reason: str = Field(default="", max_length=1_000, description="Why, in one sentence.")


class PlanState(BaseModel):
    """The plan as it stands: its steps with their status, and every revision so far."""

    model_config = ConfigDict(frozen=True)

    steps: list[PlanStep]
    status: list[PlanStepStatus]
    answer: str | None = none_omitted()
    """The plan's answer template (the latest revision's; None: it has none)."""
    outcomes: list[StepOutcome] = []
    revisions: list[Plan] = []
    replans: int = 0
    approved: bool = False
    notes: list[str] = []
    """Messages people sent while the plan ran (`steer`): every later step and the final answer
    read them."""
    notes_dropped: int = default_omitted(0)
    """How many of the oldest notes were dropped to keep `notes` bounded."""
    revised_because: list[str] = empty_omitted()
    """Why each revision after the first plan was made (a failed step, a missed expectation,
    a steering message, a rejection), in order."""
