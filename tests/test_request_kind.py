"""`RequestKind` alone: what each kind of request means for what follows."""

from __future__ import annotations

from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.loop import approvals


def test_a_plan_is_decided_like_an_approval_and_a_question_by_a_reply() -> None:
    assert [k.decided_by for k in RequestKind] == [
        RequestKind.APPROVAL, RequestKind.QUESTION, RequestKind.APPROVAL, RequestKind.CLIENT_TOOL,
    ]  # fmt: skip
    assert [k.answer_signal for k in RequestKind] == ["approve", "reply", "approve", "tool_result"]
    assert [k.runs_on_approval for k in RequestKind] == [True, False, True, False]
    assert [k.wanted for k in RequestKind] == [
        "an approval", "a reply", "an approval", "a tool result",
    ]  # fmt: skip


def test_the_json_is_the_string_it_always_was() -> None:
    made = approvals.open_request(
        kind=RequestKind.PLAN,
        workflow_id="w",
        call_id="plan-0",
        tool="plan",
        args={},
        now=__import__("datetime").datetime(2026, 12, 1),
        timeout_seconds=None,
        on_timeout="reject",
    )
    dumped = made.model_dump(mode="json")
    assert dumped["kind"] == "plan" and "--name approve" in dumped["command"]
    assert PendingRequest.model_validate(dumped).kind is RequestKind.PLAN
