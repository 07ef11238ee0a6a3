"""Unit tests of the human-in-the-loop rules in `loop.approvals`: no Temporal, no network."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from durable_agents.contracts.approvals import (
    ALL_PENDING,
    HumanDecision,
    PendingRequest,
    TimeoutAction,
    WaitKind,
)
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.loop import approvals
from durable_agents.loop.approvals import DecisionRefused, args_digest
from durable_agents.tools.builtin.ask_user import AskUserArgs, ask_user
from durable_agents.tools.builtin.calculator import calculator
from durable_agents.tools.builtin.write_file import WriteFileArgs, write_file
from durable_agents.tools.definition import question_tool, tool

NOW = datetime(2026, 1, 1, tzinfo=UTC)  # UTC is timezone.utc
LATER = NOW + timedelta(minutes=5)
WRITE_ARGS: dict[str, Any] = {"path": "a.txt", "content": "x", "overwrite": True}
EDITED_ARGS: dict[str, Any] = {"path": "b.txt", "content": "y", "overwrite": True}


class PayArgs(BaseModel):
    amount: int
    to: str = "someone"


@tool(requires_approval=lambda a: a.amount > 100)
async def pay(args: PayArgs) -> str:
    """Pay an amount."""
    return f"paid {args.amount}"


@tool(approval_timeout=timedelta(seconds=30), on_approval_timeout="approve")
async def patient(args: PayArgs) -> str:
    """A tool with its own approval timeout and action."""
    return "ok"


@tool(approval_timeout=timedelta(seconds=45))
async def only_seconds(args: PayArgs) -> str:
    """A tool with its own approval timeout only."""
    return "ok"


@tool(on_approval_timeout="fail")
async def only_action(args: PayArgs) -> str:
    """A tool with its own timeout action only."""
    return "ok"


def request(
    kind: WaitKind = RequestKind.APPROVAL,
    call_id: str = "call_1",
    *,
    tool_name: str | None = None,
    args: dict[str, Any] | None = None,
    timeout_seconds: float | None = 300,
    on_timeout: TimeoutAction = "reject",
) -> PendingRequest:
    if args is None:
        args = dict(WRITE_ARGS) if kind == "approval" else {"question": "Which file?"}
    if tool_name is None:
        tool_name = "write_file" if kind == "approval" else "ask_user"
    return approvals.open_request(
        kind=kind,
        workflow_id="wf-1",
        call_id=call_id,
        tool=tool_name,
        args=args,
        now=NOW,
        timeout_seconds=timeout_seconds,
        on_timeout=on_timeout,
    )


def pending_map(*requests: PendingRequest) -> dict[str, PendingRequest]:
    return {r.call_id: r for r in requests}


# --- args_digest ------------------------------------------------------------------------------


def test_digest_is_sha256_of_canonical_json() -> None:
    expected = hashlib.sha256(b'{"a":1,"b":"x"}').hexdigest()

    assert approvals.args_digest({"b": "x", "a": 1}) == expected


def test_digest_is_stable_across_key_order() -> None:
    first = approvals.args_digest({"path": "a.txt", "content": "x", "overwrite": True})
    second = approvals.args_digest({"overwrite": True, "content": "x", "path": "a.txt"})

    assert first == second


def test_digest_is_stable_across_nested_key_order() -> None:
    assert approvals.args_digest({"o": {"a": 1, "b": 2}}) == approvals.args_digest(
        {"o": {"b": 2, "a": 1}}
    )


@pytest.mark.parametrize(
    "changed",
    [
        {"path": "a.txt", "content": "X", "overwrite": True},
        {"path": "a.txt", "content": "x", "overwrite": False},
        {"path": "b.txt", "content": "x", "overwrite": True},
        {"path": "a.txt", "content": "x"},
        {"path": "a.txt", "content": "x", "overwrite": True, "extra": None},
    ],
)
def test_digest_differs_when_args_change(changed: dict[str, Any]) -> None:
    assert approvals.args_digest(changed) != approvals.args_digest(WRITE_ARGS)


def test_digest_distinguishes_types() -> None:
    assert approvals.args_digest({"n": 1}) != approvals.args_digest({"n": "1"})
    assert approvals.args_digest({"n": True}) != approvals.args_digest({"n": 1})


def nested(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=4) | st.dictionaries(
        st.text(max_size=8), children, max_size=4
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(), nested, max_leaves=20
)
json_dicts = st.dictionaries(st.text(max_size=12), json_values, max_size=8)


@given(json_dicts)
def test_digest_ignores_key_order_for_any_json_dict(args: dict[str, Any]) -> None:
    digest = approvals.args_digest(args)

    assert digest == approvals.args_digest(dict(reversed(list(args.items()))))
    assert re.fullmatch(r"[0-9a-f]{64}", digest)


@given(json_dicts.filter(bool), st.data())
def test_digest_changes_when_any_value_changes(args: dict[str, Any], data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(args)))
    changed = {**args, key: [args[key]]}

    assert approvals.args_digest(changed) != approvals.args_digest(args)


# --- needs_approval ---------------------------------------------------------------------------


def test_bool_rule_true_and_false() -> None:
    assert approvals.needs_approval(write_file, WRITE_ARGS) is True
    assert approvals.needs_approval(calculator, {"expression": "1+1"}) is False


def test_ask_user_needs_no_approval() -> None:
    assert approvals.needs_approval(ask_user, {"question": "Which file?"}) is False


@pytest.mark.parametrize(
    ("amount", "expected"), [(50, False), (100, False), (101, True), (500, True)]
)
def test_predicate_rule_on_args(amount: int, expected: bool) -> None:
    assert approvals.needs_approval(pay, {"amount": amount}) is expected


def test_predicate_sees_validated_args() -> None:
    # "500" compared with 100 as a raw string would raise TypeError; validated it is the int 500.
    assert approvals.needs_approval(pay, {"amount": "500"}) is True
    assert approvals.needs_approval(pay, {"amount": "50"}) is False


# --- wait_limits ------------------------------------------------------------------------------


def test_tool_options_override_run_settings() -> None:
    assert approvals.wait_limits(patient.options, 600, "reject") == (30, "approve")


def test_falls_back_to_run_settings() -> None:
    assert approvals.wait_limits(write_file.options, 600, "fail") == (600, "fail")
    assert approvals.wait_limits(write_file.options, None, "reject") == (None, "reject")


def test_seconds_and_action_fall_back_independently() -> None:
    assert approvals.wait_limits(only_seconds.options, 600, "approve") == (45, "approve")
    assert approvals.wait_limits(only_action.options, 600, "reject") == (600, "fail")
    assert approvals.wait_limits(only_action.options, None, "reject") == (None, "fail")


def test_question_tool_limits() -> None:
    asked = question_tool(
        name="ask",
        description="Ask.",
        args_model=AskUserArgs,
        timeout=timedelta(seconds=90),
        on_timeout="approve",
    )

    assert approvals.wait_limits(asked.options, 600, "reject") == (90, "approve")
    assert approvals.wait_limits(ask_user.options, 600, "fail") == (600, "fail")


# --- answer_command ---------------------------------------------------------------------------


def test_command_for_an_approval() -> None:
    assert approvals.answer_command("wf-1", RequestKind.APPROVAL, "call_1") == (
        "temporal workflow signal --workflow-id wf-1 --name approve "
        """--input '{"call_id": "call_1"}'"""
    )


def test_command_for_a_question() -> None:
    assert approvals.answer_command("wf-1", RequestKind.QUESTION, "call_2") == (
        "temporal workflow signal --workflow-id wf-1 --name reply "
        """--input '{"call_id": "call_2", "text": "..."}'"""
    )


def test_command_quotes_a_workflow_id_with_a_space() -> None:
    assert approvals.answer_command("my run", RequestKind.APPROVAL, "c1") == (
        "temporal workflow signal --workflow-id 'my run' --name approve "
        """--input '{"call_id": "c1"}'"""
    )


@pytest.mark.parametrize("kind", ["approval", "question"])
def test_command_survives_a_shell_round_trip(kind: WaitKind) -> None:
    command = approvals.answer_command("it's my run", kind, "call 'x'")

    words = shlex.split(command)

    assert words[:4] == ["temporal", "workflow", "signal", "--workflow-id"]
    assert words[4] == "it's my run"
    assert words[6] == ("reply" if kind == "question" else "approve")
    assert words[7] == "--input"
    assert json.loads(words[8])["call_id"] == "call 'x'"
    assert len(words) == 9


# --- open_request -----------------------------------------------------------------------------


def test_open_request_with_timeout() -> None:
    made = request(timeout_seconds=300, on_timeout="approve")

    assert made.kind == "approval"
    assert made.call_id == "call_1"
    assert made.tool == "write_file"
    assert made.args == WRITE_ARGS
    assert made.requested_at == NOW
    assert made.expires_at == NOW + timedelta(seconds=300)
    assert made.on_timeout == "approve"
    assert made.question is None
    assert made.args_digest == approvals.args_digest(WRITE_ARGS)
    assert made.command == approvals.answer_command("wf-1", RequestKind.APPROVAL, "call_1")


def test_open_request_with_fractional_timeout() -> None:
    assert request(timeout_seconds=0.5).expires_at == NOW + timedelta(milliseconds=500)


def test_open_request_without_timeout_never_expires() -> None:
    assert request(timeout_seconds=None).expires_at is None


def test_open_request_captures_the_question() -> None:
    made = request(RequestKind.QUESTION, "q1", args={RequestKind.QUESTION: "Which file?"})

    assert made.question == "Which file?"
    assert made.command == approvals.answer_command("wf-1", RequestKind.QUESTION, "q1")
    assert made.args_digest == approvals.args_digest({"question": "Which file?"})


def test_approval_does_not_capture_a_question_arg() -> None:
    made = request(
        RequestKind.APPROVAL,
        args={RequestKind.QUESTION: "not a question to the user"},
        tool_name="t",
    )

    assert made.question is None


def test_non_text_question_is_not_captured() -> None:
    assert request(RequestKind.QUESTION, args={RequestKind.QUESTION: 42}).question is None


# --- select_targets ---------------------------------------------------------------------------


A1 = request(RequestKind.APPROVAL, "a1")
A2 = request(RequestKind.APPROVAL, "a2")
Q1 = request(RequestKind.QUESTION, "q1")
Q2 = request(RequestKind.QUESTION, "q2")


def test_star_returns_every_pending_approval() -> None:
    assert approvals.select_targets(ALL_PENDING, pending_map(A1, Q1, A2), RequestKind.APPROVAL) == [
        A1,
        A2,
    ]


def test_star_returns_the_only_question() -> None:
    assert approvals.select_targets(ALL_PENDING, pending_map(A1, Q1), RequestKind.QUESTION) == [Q1]


def test_star_without_pending_approvals_is_refused() -> None:
    with pytest.raises(DecisionRefused, match=r"^no approval is pending$"):
        approvals.select_targets(ALL_PENDING, pending_map(Q1), RequestKind.APPROVAL)
    with pytest.raises(DecisionRefused, match=r"^no approval is pending$"):
        approvals.select_targets(ALL_PENDING, {}, RequestKind.APPROVAL)


def test_star_without_pending_questions_is_refused() -> None:
    with pytest.raises(DecisionRefused, match=r"^no question is pending$"):
        approvals.select_targets(ALL_PENDING, pending_map(A1), RequestKind.QUESTION)


def test_star_with_two_open_questions_is_refused_naming_both() -> None:
    with pytest.raises(DecisionRefused) as caught:
        approvals.select_targets(ALL_PENDING, pending_map(Q1, A1, Q2), RequestKind.QUESTION)

    assert str(caught.value) == "2 questions are open (q1, q2): name one"


def test_one_named_call() -> None:
    assert approvals.select_targets("a2", pending_map(A1, A2), RequestKind.APPROVAL) == [A2]
    assert approvals.select_targets("q1", pending_map(A1, Q1), RequestKind.QUESTION) == [Q1]


def test_unknown_id_is_refused_listing_pending_ids() -> None:
    with pytest.raises(DecisionRefused) as caught:
        approvals.select_targets("nope", pending_map(A1, Q1), RequestKind.APPROVAL)

    message = str(caught.value)
    assert "'nope'" in message
    assert "unknown or already decided" in message
    assert message.endswith("pending: a1, q1")


def test_unknown_id_with_nothing_pending() -> None:
    with pytest.raises(DecisionRefused, match=r"pending: none$"):
        approvals.select_targets("a1", {}, RequestKind.APPROVAL)


def test_approving_a_question_is_refused() -> None:
    with pytest.raises(DecisionRefused) as caught:
        approvals.select_targets("q1", pending_map(A1, Q1), RequestKind.APPROVAL)

    assert str(caught.value) == "call 'q1' is waiting for a reply, not for an approval"


def test_replying_to_an_approval_is_refused() -> None:
    with pytest.raises(DecisionRefused) as caught:
        approvals.select_targets("a1", pending_map(A1, Q1), RequestKind.QUESTION)

    assert str(caught.value) == "call 'a1' is waiting for an approval, not for a reply"


def test_decision_refused_is_a_value_error() -> None:
    assert issubclass(DecisionRefused, ValueError)


# --- check_edited_args ------------------------------------------------------------------------


def test_no_edit_gives_none() -> None:
    assert approvals.check_edited_args(A1, None, WriteFileArgs) is None


def test_valid_edit_is_validated_with_defaults() -> None:
    edited = approvals.check_edited_args(A1, {"path": "b.txt", "content": "y"}, WriteFileArgs)

    assert edited == EDITED_ARGS


def test_valid_edit_is_coerced_to_json_data() -> None:
    edited = approvals.check_edited_args(A1, {"amount": "7"}, PayArgs)

    assert edited == {"amount": 7, "to": "someone"}


def test_missing_field_is_refused_naming_it() -> None:
    with pytest.raises(DecisionRefused) as caught:
        approvals.check_edited_args(A1, {"content": "y"}, WriteFileArgs)

    message = str(caught.value)
    assert message.startswith("edited arguments for write_file are invalid: ")
    assert "path: Field required" in message


def test_wrong_type_is_refused_naming_the_field() -> None:
    with pytest.raises(DecisionRefused, match="overwrite"):
        approvals.check_edited_args(
            A1, {"path": "a.txt", "content": "x", "overwrite": "maybe"}, WriteFileArgs
        )


# --- check_digest -----------------------------------------------------------------------------


def test_no_digest_passes() -> None:
    approvals.check_digest(A1, None)


def test_matching_digest_passes() -> None:
    approvals.check_digest(A1, approvals.args_digest(dict(reversed(list(WRITE_ARGS.items())))))


@pytest.mark.parametrize(
    "digest", [approvals.args_digest({**WRITE_ARGS, "content": "z"}), "0" * 64, ""]
)
def test_mismatched_digest_is_refused(digest: str) -> None:
    with pytest.raises(DecisionRefused, match="args_digest does not match call 'a1'"):
        approvals.check_digest(A1, digest)


# --- approved / rejected / answered / timed_out / should_run ----------------------------------


def test_approved_without_edit() -> None:
    decision = approvals.approved(A1, now=LATER, edited_args=None, by="alice", comment="fine")

    assert decision.call_id == "a1"
    assert decision.kind == "approval"
    assert decision.outcome == "approved"
    assert decision.by == "alice"
    assert decision.comment == "fine"
    assert decision.at == LATER
    assert decision.model_args == WRITE_ARGS
    assert decision.executed_args == WRITE_ARGS
    assert decision.timeout_action is None
    assert approvals.should_run(decision) is True


def test_approved_with_different_args_is_edited() -> None:
    decision = approvals.approved(A1, now=LATER, edited_args=EDITED_ARGS, by=None, comment=None)

    assert decision.outcome == "edited"
    assert decision.model_args == WRITE_ARGS
    assert decision.executed_args == EDITED_ARGS
    assert approvals.should_run(decision) is True


def test_approved_with_identical_args_counts_as_approved() -> None:
    same = dict(reversed(list(WRITE_ARGS.items())))

    decision = approvals.approved(A1, now=LATER, edited_args=same, by=None, comment=None)

    assert decision.outcome == "approved"
    assert decision.executed_args == WRITE_ARGS


def test_rejected() -> None:
    decision = approvals.rejected(A1, now=LATER, reason="too risky", by="bob")

    assert decision.call_id == "a1"
    assert decision.kind == "approval"
    assert decision.outcome == "rejected"
    assert decision.reason == "too risky"
    assert decision.by == "bob"
    assert decision.at == LATER
    assert decision.model_args == WRITE_ARGS
    assert decision.executed_args is None
    assert approvals.should_run(decision) is False


def test_answered() -> None:
    decision = approvals.answered(Q1, now=LATER, text="notes.md", by="carol")

    assert decision.call_id == "q1"
    assert decision.kind == "question"
    assert decision.outcome == "answered"
    assert decision.reply == "notes.md"
    assert decision.by == "carol"
    assert decision.at == LATER
    assert decision.model_args == {"question": "Which file?"}
    assert decision.executed_args is None
    assert approvals.should_run(decision) is False


@pytest.mark.parametrize(
    ("kind", "action", "runs"),
    [
        ("approval", "approve", True),
        ("approval", "reject", False),
        ("approval", "fail", False),
        ("question", "approve", False),
        ("question", "reject", False),
        ("question", "fail", False),
    ],
)
def test_timed_out(kind: WaitKind, action: TimeoutAction, runs: bool) -> None:
    pending = request(kind, "c9", on_timeout=action)

    decision = approvals.timed_out(pending, now=LATER)

    assert decision.call_id == "c9"
    assert decision.kind == kind
    assert decision.outcome == "timed_out"
    assert decision.at == LATER
    assert decision.timeout_action == action
    assert decision.by is None
    assert decision.model_args == pending.args
    assert decision.executed_args == (pending.args if runs else None)
    assert approvals.should_run(decision) is runs


def test_a_question_never_runs_even_with_executed_args() -> None:
    decision = HumanDecision(
        call_id="q1",
        kind="question",
        outcome="answered",
        at=LATER,
        model_args={"question": "Which file?"},
        executed_args={"question": "Which file?"},
    )

    assert approvals.should_run(decision) is False


# --- decision_observation ---------------------------------------------------------------------


def test_observation_of_an_answer_is_the_reply() -> None:
    decision = approvals.answered(Q1, now=LATER, text="Use notes.md, please.", by=None)

    assert approvals.decision_observation(Q1, decision) == "Use notes.md, please."


def test_observation_of_an_empty_answer_is_empty() -> None:
    decision = approvals.answered(Q1, now=LATER, text="", by=None)

    assert approvals.decision_observation(Q1, decision) == ""


def test_observation_of_a_rejection_with_by_and_reason() -> None:
    decision = approvals.rejected(A1, now=LATER, reason="too risky", by="alice")

    assert approvals.decision_observation(A1, decision) == (
        "Rejected by alice: too risky. The write_file call was not run; "
        "find another way or answer without it."
    )


def test_observation_of_a_rejection_without_by_or_reason() -> None:
    decision = approvals.rejected(A1, now=LATER, reason=None, by=None)

    assert approvals.decision_observation(A1, decision) == (
        "Rejected by the reviewer: no reason given. The write_file call was not run; "
        "find another way or answer without it."
    )


@pytest.mark.parametrize("action", ["reject", "fail"])
def test_observation_of_an_approval_timeout(action: TimeoutAction) -> None:
    pending = request(RequestKind.APPROVAL, "a1", timeout_seconds=300, on_timeout=action)
    decision = approvals.timed_out(pending, now=LATER)

    text = approvals.decision_observation(pending, decision)

    assert text == (
        "Error: the approval request for write_file timed out after 300s with no decision; "
        "the call was not run."
    )
    assert "reject" not in text.lower()
    assert "denied" not in text.lower()


def test_observation_of_a_fractional_approval_timeout() -> None:
    pending = request(RequestKind.APPROVAL, "a1", timeout_seconds=1.5)
    decision = approvals.timed_out(pending, now=LATER)

    assert "timed out after 1.5s" in approvals.decision_observation(pending, decision)


def test_observation_of_a_question_timeout_that_continues() -> None:
    pending = request(RequestKind.QUESTION, "q1", timeout_seconds=90, on_timeout="approve")
    decision = approvals.timed_out(pending, now=LATER)

    assert approvals.decision_observation(pending, decision) == (
        "The user did not reply within 90s; continue without their answer."
    )


def test_observation_of_a_question_timeout_that_rejects() -> None:
    pending = request(RequestKind.QUESTION, "q1", timeout_seconds=90, on_timeout="reject")
    decision = approvals.timed_out(pending, now=LATER)

    assert approvals.decision_observation(pending, decision) == (
        "Error: no reply from the user within 90s."
    )


# --- edited_note ------------------------------------------------------------------------------


def test_edited_note_mentions_both_arg_sets() -> None:
    decision = approvals.approved(A1, now=LATER, edited_args=EDITED_ARGS, by=None, comment=None)

    note = approvals.edited_note(decision)

    assert note == (
        "Note: a reviewer changed the arguments before running the tool; it ran with "
        '{"content": "y", "overwrite": true, "path": "b.txt"} instead of '
        '{"content": "x", "overwrite": true, "path": "a.txt"}.'
    )


def test_edited_note_keeps_non_ascii_text() -> None:
    decision = approvals.approved(
        A1, now=LATER, edited_args={**WRITE_ARGS, "content": "é"}, by=None, comment=None
    )

    assert '"content": "é"' in (approvals.edited_note(decision) or "")


def test_no_edited_note_for_other_decisions() -> None:
    decisions = [
        approvals.approved(A1, now=LATER, edited_args=None, by=None, comment=None),
        approvals.approved(A1, now=LATER, edited_args=dict(WRITE_ARGS), by=None, comment=None),
        approvals.rejected(A1, now=LATER, reason=None, by=None),
        approvals.answered(Q1, now=LATER, text="x", by=None),
        approvals.timed_out(request(RequestKind.APPROVAL, on_timeout="approve"), now=LATER),
    ]

    assert [approvals.edited_note(d) for d in decisions] == [None] * len(decisions)


# --- waited_seconds ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timeout", "expected"), [(300, 300.0), (0.25, 0.25), (86400, 86400.0), (None, 0.0)]
)
def test_waited_seconds(timeout: float | None, expected: float) -> None:
    assert approvals.waited_seconds(request(timeout_seconds=timeout)) == expected


def test_what_another_run_reports_is_bound_by_its_own_digest() -> None:
    reported = request(RequestKind.APPROVAL, args={"path": "harmless.txt"}, tool_name="t")
    lying = reported.model_copy(update={"args_digest": args_digest({"path": "evil.txt"})})
    [shown] = approvals.as_shown([lying])
    assert shown.args_digest == args_digest({"path": "harmless.txt"})


def test_a_forwarded_approval_names_each_shown_call_with_its_digest() -> None:
    bound = approvals.bound_approvals({"call_id": "*", "by": "a"}, [("w1", "d1"), ("w2", "d2")])
    assert bound == [
        {"call_id": "w1", "by": "a", "args_digest": "d1"},
        {"call_id": "w2", "by": "a", "args_digest": "d2"},
    ]
    edited = {"call_id": "*", "args": {"path": "x"}}
    assert approvals.bound_approvals(edited, [("w1", "d1"), ("w2", "d2")]) is None
    assert approvals.bound_approvals(edited, [("w1", "d1")]) == [
        {"call_id": "w1", "args": {"path": "x"}, "args_digest": "d1"}
    ]
