"""What a run shows while it goes on: the `status` query and the Web UI's current details.

Both are computed from the run's state and its pending human requests when they are needed,
never kept as a copy that has to be updated in step with the state.
"""

from __future__ import annotations

from collections.abc import Sequence

from durable_agents.contracts.agent_result import StopReason
from durable_agents.contracts.agent_status import AgentStatus, Phase, RunningCall
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.definition import AgentDefinition
from durable_agents.contracts.scratchpad import Scratchpad
from durable_agents.loop.plan import MARKS
from durable_agents.loop.review_display import markdown_pending, markdown_text
from durable_agents.loop.summaries import plural, shorten

RECENT_STEPS_IN_STATUS = 5


def visible_phase(phase: Phase, waiting: bool) -> Phase:
    """While tools run, the phase is `waiting_for_human` exactly when a call waits for a
    person."""
    if phase in ("running_tools", "waiting_for_human"):
        return "waiting_for_human" if waiting else "running_tools"
    return phase


def run_status(
    pad: Scratchpad,
    *,
    phase: Phase,
    max_iterations: int,
    stop_reason: StopReason | None,
    pending: Sequence[PendingRequest],
    running: Sequence[RunningCall] = (),
    definition: AgentDefinition | None = None,
) -> AgentStatus:
    """A snapshot of the run (`running`: the tool calls running now; `definition`: the one it
    goes by)."""
    return AgentStatus(
        phase=visible_phase(phase, bool(pending)),
        iteration=pad.iteration,
        max_iterations=max_iterations,
        model=pad.model or None,
        usage=pad.usage,
        steps=len(pad.steps) + pad.steps_omitted,
        recent_steps=pad.steps[-RECENT_STEPS_IN_STATUS:],
        stop_reason=stop_reason,
        pending=list(pending),
        steering=pad.steering,
        plan=pad.plan,
        running=list(running),
        definition=definition.label if definition is not None else None,
        definition_digest=definition.digest if definition is not None else None,
    )


def running_line(calls: Sequence[RunningCall]) -> str | None:
    """`running now: calculator (call_1), fetch (call_2: 40% page 2 of 5)`, or None."""
    if not calls:
        return None
    shown = []
    for call in calls:
        progress = call.progress or ""
        if call.fraction is not None:
            progress = f"{round(call.fraction * 100)}% {progress}".strip()
        detail = f"{call.call_id}: {shorten(progress, 80)}" if progress else call.call_id
        shown.append(f"{markdown_text(call.tool)} ({markdown_text(detail)})")
    return "running now: " + ", ".join(shown)


def current_details(status: AgentStatus) -> str:
    """Markdown for the Web UI (and `temporal workflow describe`): where the run is and, for
    every call waiting for a person, its arguments as the person deciding should see them
    (`loop/review_display.py`: deciding ones first and in full, long ones cut with their size,
    invisible characters escaped) and the command that answers it, in a code span so it
    renders literally and pastes into a shell. Text from the model (plan goals) is escaped."""
    if status.phase == "done":
        reason = status.stop_reason
        ending = reason if reason is None or reason.answered else f"{reason}, no answer"
        return (
            f"done ({ending}) after {status.iteration} turns · {status.usage.total_tokens} tokens"
        )
    if status.phase == "cancelled":
        return (
            f"cancelled at turn {status.iteration} after {plural(status.steps, 'tool call')} · "
            f"{status.usage.total_tokens} tokens"
        )
    lines = [
        f"turn {status.iteration} of {status.max_iterations}: "
        f"{status.phase.replace('_', ' ')} · {status.usage.total_tokens} tokens · "
        f"{plural(status.steps, 'tool call')}"
    ]
    plan = status.plan
    if plan is not None:
        steps = zip(plan.steps, plan.status, strict=True)
        lines.append(
            "plan:\n\n"
            + "\n".join(
                f"- {MARKS[state]} {i}. {markdown_text(step.goal)}"
                for i, (step, state) in enumerate(steps, start=1)
            )
        )
    running = running_line(status.running)
    if running:
        lines.append(running)
    if status.steering:
        lines.append(f"{len(status.steering)} steering message(s) for the model's next call")
    lines += [markdown_pending(request, plan_above=plan is not None) for request in status.pending]
    return "\n\n".join(lines)
