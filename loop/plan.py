"""Plan-and-execute as pure functions: asking for a plan (and a revision), reading it, moving
the plan forward as steps run, what a step is told, the synthesis request, and the checklist
people see (✓ done, → running, ✗ failed, · pending)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import ValidationError

from contracts.messages import ChatMessage, SteerMessage
from contracts.model_io import ToolSchema
from contracts.plan import Plan, PlanState, PlanStep, PlanStepStatus, StepOutcome
from loop.summaries import shorten
from loop.validation_errors import describe_validation_error

SUBMIT_PLAN_TOOL = "submit_plan"
MARKS: dict[PlanStepStatus, str] = {"done": "✓", "running": "→", "failed": "✗", "pending": "·"}
RESULT_CHARS = 2_000

PLANNER_PROMPT = (
    "You plan the work of an AI agent. Break the user's request into a few concrete steps, in "
    "order, each achievable with the available tools; the results of earlier steps are given "
    "to later ones. Give the plan by calling submit_plan."
)


def plan_tool() -> ToolSchema:
    """The tool the planning call answers with (the plan's JSON schema)."""
    parameters = Plan.model_json_schema()
    parameters.pop("title", None)
    return ToolSchema(
        name=SUBMIT_PLAN_TOOL,
        description="Submit the plan: the steps, in order, each with its goal and optionally "
        "the tools it expects to use.",
        parameters=parameters,
    )


def read_plan(arguments: str) -> Plan | str:
    """The plan in a `submit_plan` call's arguments, or why it is not one."""
    try:
        return Plan.model_validate(json.loads(arguments or "{}"))
    except json.JSONDecodeError as error:
        return f"the plan is not valid JSON ({error.msg})"
    except ValidationError as error:
        return f"the plan is invalid: {describe_validation_error(error)}"


def planning_request(
    prompt: str, tools: Sequence[ToolSchema], state: PlanState | None, feedback: str | None
) -> list[ChatMessage]:
    """Messages asking for a plan, or (with `state`) for a revision of the steps not done."""
    lines = [f"Request: {prompt}", "", "Available tools:"]
    lines += [f"- {t.name}: {shorten(t.description, 200)}" for t in tools] or ["- (none)"]
    if state is not None:
        lines += ["", "The plan so far:", checklist(state)]
        lines += [f"Result of step {o.index}: {shorten(o.answer, 500)}" for o in state.outcomes]
        lines += ["", "Revise the plan: give only the steps still to do, from the next one on."]
    if feedback:
        lines += ["", f"Feedback: {feedback}"]
    return [ChatMessage.system(PLANNER_PROMPT), ChatMessage.user("\n".join(lines))]


def new_plan(plan: Plan) -> PlanState:
    return PlanState(steps=list(plan.steps), status=["pending"] * len(plan.steps), revisions=[plan])


def revised(state: PlanState, plan: Plan) -> PlanState:
    """The steps done stay; the rest are replaced by the revision's steps."""
    done = [i for i, status in enumerate(state.status) if status == "done"]
    steps = [state.steps[i] for i in done] + list(plan.steps)
    return state.model_copy(
        update={
            "steps": steps,
            "status": ["done"] * len(done) + ["pending"] * len(plan.steps),
            "revisions": [*state.revisions, plan],
            "replans": state.replans + 1,
        }
    )


def next_step(state: PlanState) -> int | None:
    return next((i for i, status in enumerate(state.status) if status == "pending"), None)


def with_status(state: PlanState, index: int, status: PlanStepStatus) -> PlanState:
    statuses = list(state.status)
    statuses[index] = status
    return state.model_copy(update={"status": statuses})


def with_outcome(state: PlanState, outcome: StepOutcome) -> PlanState:
    state = with_status(state, outcome.index - 1, outcome.status)
    return state.model_copy(update={"outcomes": [*state.outcomes, outcome]})


def with_notes(state: PlanState, steering: Sequence[SteerMessage]) -> PlanState:
    """Steering messages that arrived while the plan ran become notes for what follows; the
    oldest are dropped (and counted) once they would pass `MAX_PLAN_NOTES_CHARS`."""
    notes = [f"{s.by or 'the user'}: {s.text}" for s in steering]
    if not notes:
        return state
    kept = recent_notes([*state.notes, *notes])
    dropped = state.notes_dropped + len(state.notes) + len(notes) - len(kept)
    return state.model_copy(update={"notes": kept, "notes_dropped": dropped})


MAX_PLAN_NOTES_CHARS = 50_000
"""Most characters of notes a plan keeps: every later step's task carries them."""


def recent_notes(notes: list[str], budget: int = MAX_PLAN_NOTES_CHARS) -> list[str]:
    """The most recent notes that fit in `budget` characters, oldest first."""
    kept: list[str] = []
    used = 0
    for note in reversed(notes):
        if used + len(note) > budget:
            break
        kept.append(note)
        used += len(note)
    return kept[::-1]


def _notes_lines(state: PlanState) -> list[str]:
    if not state.notes:
        return []
    dropped = (
        [f"({state.notes_dropped} earlier message(s) dropped: the notes are full)"]
        if state.notes_dropped
        else []
    )
    return ["", "Messages from people while the plan ran (follow them):", *dropped, *state.notes]


def step_task(prompt: str, state: PlanState, index: int) -> str:
    """What a step's run is told: the overall request, earlier results, what people said while
    the plan ran, and its goal."""
    step = state.steps[index]
    lines = [f"Overall request: {prompt}"]
    done = [o for o in state.outcomes if o.status == "done"]
    if done:
        lines += ["", "Results of the earlier steps:"]
        lines += [f"{o.index}. {o.goal}: {shorten(o.answer, RESULT_CHARS)}" for o in done]
    lines += _notes_lines(state)
    lines += ["", f"Your step ({index + 1} of {len(state.steps)}): {step.goal}"]
    return "\n".join(lines)


def synthesis_request(prompt: str, state: PlanState) -> list[ChatMessage]:
    """Messages asking for the final answer from the steps' results."""
    lines = [f"Request: {prompt}", "", "What the steps found:"]
    lines += [
        f"{o.index}. {o.goal} ({'done' if o.status == 'done' else 'failed'}): "
        f"{shorten(o.answer, RESULT_CHARS)}"
        for o in state.outcomes
    ]
    lines += _notes_lines(state)
    lines += ["", "Write the final answer to the request. Say what could not be done, if any."]
    return [
        ChatMessage.system("You write the final answer of an AI agent from its work."),
        ChatMessage.user("\n".join(lines)),
    ]


def checklist(state: PlanState) -> str:
    """The plan as a checklist: `✓ 1. goal`, `→ 2. goal`, `✗ ...`, `· ...`."""
    return "\n".join(
        f"{MARKS[status]} {i}. {step.goal}"
        for i, (step, status) in enumerate(zip(state.steps, state.status, strict=True), start=1)
    )


def plan_args(plan: Plan | PlanState) -> dict[str, object]:
    """The plan as the arguments of its approval request."""
    steps: Sequence[PlanStep] = plan.steps
    return {"steps": [step.model_dump(exclude_none=True) for step in steps]}
