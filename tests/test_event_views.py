"""`loop/event_views.py`: what the event stream shows of the loop's state, pure functions (no
Temporal): shortened texts, the limit a stop reason names, an approval's outcome, the plan's
checklist and when a change of the plan is a new `plan_updated`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from durable_agents.contracts.approvals import HumanDecision
from durable_agents.contracts.plan import Plan, PlanState, PlanStep
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.contracts.stop_reason import StopReason
from durable_agents.loop.event_views import (
    EVENT_TEXT_CHARS,
    HEADLINE_CHARS,
    LIMIT_REASONS,
    decision_of,
    event_text,
    headline,
    limit_of,
    plan_key,
    plan_steps,
)

AT = datetime(2026, 12, 1, tzinfo=UTC)


def test_headline_is_one_short_line() -> None:
    assert headline("Write hello\n  world\tto notes.txt") == "Write hello world to notes.txt"
    long = headline("x" * 1000)
    assert len(long) == HEADLINE_CHARS and long.endswith("…")
    assert headline(None) == "" and headline("") == ""


def test_event_text_keeps_lines_and_is_cut_at_its_limit() -> None:
    assert event_text("line 1\nline 2") == "line 1\nline 2"
    cut = event_text("y" * 2000)
    assert len(cut) == EVENT_TEXT_CHARS and cut.endswith("…")
    assert len(event_text("z" * 100, limit=10)) == 10
    assert event_text(None) == ""


@pytest.mark.parametrize("reason", list(StopReason))
def test_limit_of_names_only_the_limits(reason: StopReason) -> None:
    if reason in LIMIT_REASONS:
        assert limit_of(reason) == reason.value
    else:
        assert limit_of(reason) is None


def test_the_limits_are_the_ones_the_docs_list() -> None:
    assert {limit_of(r) for r in LIMIT_REASONS} == {
        "max_iterations",
        "token_budget",
        "cost_budget",
        "repeated_calls",
        "length",
    }
    assert limit_of(StopReason.COMPLETED) is None


def decision(outcome: Any, kind: RequestKind = RequestKind.APPROVAL) -> HumanDecision:
    return HumanDecision(call_id="w1", kind=kind, outcome=outcome, at=AT, model_args={})


@pytest.mark.parametrize(
    ("outcome", "shown"),
    [
        ("approved", "approved"),
        ("edited", "edited"),
        ("rejected", "rejected"),
        ("timed_out", "timed_out"),
        ("answered", "approved"),  # (a reply is published as question_answered)
    ],
)
def test_decision_of(outcome: str, shown: str) -> None:
    assert decision_of(decision(outcome)) == shown


def state(*statuses: Any, approved: bool = False, revisions: int = 1) -> PlanState:
    steps = [PlanStep(goal="find the file"), PlanStep(goal="summarise it")]
    plan = Plan(steps=steps)
    return PlanState(
        steps=steps, status=list(statuses), revisions=[plan] * revisions, approved=approved
    )


def test_plan_steps_numbers_each_step_with_its_status() -> None:
    steps = plan_steps(state("done", "running"))
    assert [(s.index, s.description, s.status) for s in steps] == [
        (1, "find the file", "done"),
        (2, "summarise it", "running"),
    ]


def test_plan_key_changes_exactly_when_what_the_event_shows_changes() -> None:
    assert plan_key(None) is None
    first = plan_key(state("pending", "pending"))
    assert plan_key(state("pending", "pending")) == first  # the same plan: no new event
    assert plan_key(state("running", "pending")) != first  # a step's status
    assert plan_key(state("pending", "pending", revisions=2)) != first  # a revision
    assert plan_key(state("pending", "pending", approved=True)) != first  # approved
