"""Plan-and-execute as pure functions: asking for a plan (and a revision), reading it, moving
the plan forward as steps run, what a step is told, the synthesis request, and the checklist
people see (✓ done, → running, ✗ failed, · pending)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import ValidationError

from durable_agents.contracts.messages import ChatMessage, SteerMessage
from durable_agents.contracts.model_io import ToolSchema
from durable_agents.contracts.plan import Plan, PlanState, PlanStep, PlanStepStatus, StepOutcome
from durable_agents.loop.plan_schema import model_parameters
from durable_agents.loop.summaries import shorten
from durable_agents.loop.validation_errors import describe_validation_error

SUBMIT_PLAN_TOOL = "submit_plan"
MARKS: dict[PlanStepStatus, str] = {"done": "✓", "running": "→", "failed": "✗", "pending": "·"}
RESULT_CHARS = 2_000

PLANNER_PROMPT = (
    'Plan the request; call submit_plan. A step is a tool action {"tool", "args"} (no model '
    'call) or a {"goal"} that needs reasoning. Args may use an earlier result: ${steps.1.result} '
    'is step 1\'s. "expect": what a result should be. "answer": the final answer as a '
    "template over the results."
)
"""What the planner is told; the details of each field are in `submit_plan`'s schema."""
TOOL_DESCRIPTION_CHARS = 120
"""A tool's description, for the planner: its first paragraph, at most this long."""


def plan_tool() -> ToolSchema:
    """The tool the planning call answers with (the plan's JSON schema, compact)."""
    parameters = model_parameters(Plan)
    return ToolSchema(
        name=SUBMIT_PLAN_TOOL,
        description="Submit the plan: the steps, in order; each a goal (optionally with the "
        "tools it expects to use) or a tool action (tool and args), optionally with what its "
        "result should be (expect); and perhaps the answer as a template over the results.",
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


def retry_note(problem: str) -> str:
    """What the planning call is told when its answer could not be used."""
    return (
        f"That answer gave no usable plan ({shorten(problem, 1_000)}). Call submit_plan again "
        "with a plan that can run."
    )


def planning_request(
    prompt: str, tools: Sequence[ToolSchema], state: PlanState | None, feedback: str | None
) -> list[ChatMessage]:
    """Messages asking for a plan, or (with `state`) for a revision of the steps not done (its
    steps are numbered after the steps done, which its references may use)."""
    listed = [f"- {signature(t)}: {tool_summary(t.description)}" for t in tools]
    lines = [f"Request: {prompt}", "Tools:", *(listed or ["- (none)"])]
    if state is not None:
        done = done_count(state)
        lines += ["", "The plan so far:", checklist(state)]
        lines += [f"Result of step {o.index}: {shorten(o.answer, 500)}" for o in state.outcomes]
        lines += [
            "",
            "Revise the plan: give only the steps still to do, from the next one on; they are "
            f"numbered from {done + 1} (steps 1 to {done} are done, and their results can be "
            "used)."
            if done
            else "Revise the plan: give only the steps still to do, from the next one on.",
        ]
    if feedback:
        lines += ["", f"Feedback: {feedback}"]
    return [ChatMessage.system(PLANNER_PROMPT), ChatMessage.user("\n".join(lines))]


def tool_summary(description: str) -> str:
    """A tool's description for the planner: its first paragraph, shortened."""
    return shorten(description.strip().split("\n\n")[0], TOOL_DESCRIPTION_CHARS)


def signature(tool: ToolSchema) -> str:
    """`calculator(expression: string)`: a tool's name and arguments, for the planner."""
    properties = tool.parameters.get("properties")
    if not isinstance(properties, dict):
        return tool.name
    required = set(tool.parameters.get("required") or [])
    args = [
        f"{name}{'' if name in required else '?'}: {spec.get('type', 'any')}"
        if isinstance(spec, dict)
        else name
        for name, spec in properties.items()
    ]
    return f"{tool.name}({', '.join(args)})"


def done_count(state: PlanState) -> int:
    """How many steps are done (they come first: a revision follows them)."""
    return sum(1 for status in state.status if status == "done")


def new_plan(plan: Plan) -> PlanState:
    return PlanState(
        steps=list(plan.steps),
        status=["pending"] * len(plan.steps),
        answer=plan.answer,
        revisions=[plan],
    )


def revised(state: PlanState, plan: Plan, because: str | None = None) -> PlanState:
    """The steps done stay; the rest are replaced by the revision's steps, and the answer
    template by the revision's (`because`: why, recorded in `revised_because`)."""
    done = [i for i, status in enumerate(state.status) if status == "done"]
    steps = [state.steps[i] for i in done] + list(plan.steps)
    return state.model_copy(
        update={
            "steps": steps,
            "status": ["done"] * len(done) + ["pending"] * len(plan.steps),
            "answer": plan.answer,
            "revisions": [*state.revisions, plan],
            "replans": state.replans + 1,
            "revised_because": [*state.revised_because, *([because] if because else [])],
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
    """What a goal step's run is told: the overall request, the whole plan and its place in
    it, earlier results, what people said while the plan ran, and its goal."""
    step = state.steps[index]
    lines = [f"Overall request: {prompt}", "", plan_view(state, index)]
    done = [o for o in state.outcomes if o.status == "done"]
    if done:
        lines += ["", "Results of the earlier steps:"]
        lines += [f"{o.index}. {o.goal}: {shorten(o.answer, RESULT_CHARS)}" for o in done]
    lines += _notes_lines(state)
    lines += ["", f"Your step ({index + 1} of {len(state.steps)}): {step.goal}"]
    return "\n".join(lines)


def plan_view(state: PlanState, index: int) -> str:
    """The whole plan with step `index` marked: each step's number, status, goal and kind."""
    lines = [f"The whole plan (step {index + 1} of {len(state.steps)} is this one):"]
    for i, (step, status) in enumerate(zip(state.steps, state.status, strict=True)):
        kind = f" [tool action: {step.tool}]" if step.tool is not None else ""
        here = "  <- this step" if i == index else ""
        lines.append(f"  {MARKS[status]} {i + 1}. {step.goal}{kind}{here}")
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
    """The plan as the arguments of its approval request (its answer template, if any)."""
    steps: Sequence[PlanStep] = plan.steps
    answer = {"answer": plan.answer} if plan.answer is not None else {}
    return {"steps": [step.model_dump(exclude_none=True) for step in steps], **answer}
