"""What the event stream shows of the loop's state: pure functions from the run's models to the
fields of `contracts.events` (no Temporal, no I/O)."""

from __future__ import annotations

from durable_agents.contracts.approvals import HumanDecision
from durable_agents.contracts.events import PlanStepView
from durable_agents.contracts.plan import PlanState
from durable_agents.contracts.stop_reason import StopReason
from durable_agents.loop.summaries import shorten

EVENT_TEXT_CHARS = 500
"""How much of an observation or an error an event shows (`tool_call_finished` and the like
are for display; the model reads the whole text, the result keeps it). Kept short on purpose:
every subscriber's poll records the events it reads in the run's history again."""
HEADLINE_CHARS = 200
"""How much of a prompt, a user's message or a reply's text an event repeats (the prompt is
the run's input; the reply's text came whole in its deltas)."""

LIMIT_REASONS = frozenset(
    {
        StopReason.MAX_ITERATIONS,
        StopReason.TOKEN_BUDGET,
        StopReason.COST_BUDGET,
        StopReason.REPEATED_CALLS,
        StopReason.LENGTH,
    }
)
"""Stop reasons that are a limit the run reached (`limit_reached` precedes `run_finished`)."""


def headline(text: str | None) -> str:
    """`text` shortened to `HEADLINE_CHARS`, on one line."""
    return shorten(text or "", HEADLINE_CHARS)


def event_text(text: str | None, limit: int = EVENT_TEXT_CHARS) -> str:
    """`text` shortened for an event (line breaks kept)."""
    return shorten(text or "", limit, one_line=False)


def limit_of(reason: StopReason) -> str | None:
    """The limit a run that stopped for `reason` reached, or None (it did not stop at one)."""
    return reason.value if reason in LIMIT_REASONS else None


def decision_of(decision: HumanDecision) -> str:
    """An approval's outcome as `approval_decided` names it."""
    if decision.outcome == "answered":  # (a question's reply is `question_answered`)
        return "approved"
    return decision.outcome


def plan_steps(plan: PlanState) -> list[PlanStepView]:
    """The plan's checklist: each step's goal and status, numbered from 1."""
    return [
        PlanStepView(index=i, description=step.goal, status=status)
        for i, (step, status) in enumerate(zip(plan.steps, plan.status, strict=False), start=1)
    ]


def plan_key(plan: PlanState | None) -> tuple[object, ...] | None:
    """What `plan_updated` reports of a plan; a change of it is a new event."""
    if plan is None:
        return None
    return (
        tuple((step.goal, status) for step, status in zip(plan.steps, plan.status, strict=False)),
        len(plan.revisions),
        plan.approved,
    )
