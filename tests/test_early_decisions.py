"""A decision that arrives before its call is pending (docs/fleet.md, "A worker killed").

The race it stands for: a worker killed just after a model reply may already have answered
`pending_approvals` from the workflow task it never committed; the next worker replays and gets
the person's signal and the reply in one workflow task, and the SDK applies the signal first.
Here the same order is made without a kill: the scripted model holds its reply, the decision is
sent (its `WorkflowExecutionSignaled` event is in history), then the reply is let go. A kept
decision naming the call (and its digest, if given) is applied once the call waits; `*` is not
kept; a mismatched digest is not applied; a `decide` update is still refused before history.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import (
    DECISION_REFUSED,
    ApproveSignal,
    HumanDecision,
    RejectSignal,
    ReplySignal,
)
from durable_agents.loop import approvals
from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.agent_test_tools import executions
from tests.conftest import ScriptedHarness
from tests.hitl_support import wait_for_pending
from tests.test_tool_precheck import replays

ARGS = {"label": "launch"}
DIGEST = approvals.args_digest(ARGS)


async def held_call(
    harness: ScriptedHarness, *calls: sm.ScriptedCall, tools: list[str]
) -> tuple[WorkflowHandle[Any, Any], asyncio.Event]:
    """A run whose first model call is in flight, its reply (`calls`) held until the event is
    set; then the model answers `done`."""
    release = asyncio.Event()
    harness.model.enqueue(sm.gate(release, sm.tool_calls(*calls)), sm.text("done"))
    handle = await harness.start({"prompt": "go", "tools": tools})
    await eventually(lambda: len(harness.model.requests) == 1, what="the model call in flight")
    return handle, release


async def signalled(handle: WorkflowHandle[Any, Any], name: str, payload: Any) -> None:
    """Send a signal and wait until it is in the run's history (so it comes before the reply)."""
    await handle.signal(name, payload)

    async def in_history() -> bool:
        events = (await handle.fetch_history()).events
        return any(
            e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
            and e.workflow_execution_signaled_event_attributes.signal_name == name
            for e in events
        )

    await eventually(in_history, what=f"signal {name} in history")


async def finished(handle: WorkflowHandle[Any, Any]) -> AgentResult:
    """The run's result, once it has one (a hang guard, not a time limit: a run that waits
    forever for a dropped decision fails here)."""

    async def closed() -> bool:
        return (await handle.describe()).close_time is not None

    await eventually(closed, what=f"{handle.id} to finish")
    result = await handle.result()
    assert isinstance(result, AgentResult)
    return result


async def test_an_approval_sent_before_its_call_waits_runs_the_call_once(
    scripted_agent: ScriptedHarness,
) -> None:
    handle, release = await held_call(
        scripted_agent, sm.call("side_effect", ARGS, id="s1"), tools=["side_effect"]
    )
    await signalled(handle, "approve", {"call_id": "s1", "args_digest": DIGEST, "by": "early"})
    release.set()

    result = await finished(handle)
    [step] = result.steps
    assert (step.status, step.observation) == ("ok", "did launch")
    assert step.human is not None and (step.human.outcome, step.human.by) == ("approved", "early")
    assert executions[f"{handle.id}/1/s1"] == 1
    await replays(handle)


async def test_a_rejection_sent_before_its_call_waits_is_applied(
    scripted_agent: ScriptedHarness,
) -> None:
    handle, release = await held_call(
        scripted_agent, sm.call("side_effect", ARGS, id="s1"), tools=["side_effect"]
    )
    await signalled(handle, "reject", {"call_id": "s1", "reason": "not now", "by": "early"})
    release.set()

    result = await finished(handle)
    [step] = result.steps
    assert step.status == "rejected" and step.human is not None
    assert (step.human.by, step.human.reason) == ("early", "not now")
    assert executions[f"{handle.id}/1/s1"] == 0
    await replays(handle)


async def test_a_reply_sent_before_its_question_is_asked_answers_it(
    scripted_agent: ScriptedHarness,
) -> None:
    handle, release = await held_call(
        scripted_agent, sm.call("ask_user", {"question": "which?"}, id="q1"), tools=["ask_user"]
    )
    await signalled(handle, "reply", {"call_id": "q1", "text": "the blue one"})
    release.set()

    result = await finished(handle)
    [step] = result.steps
    assert (step.status, step.observation) == ("ok", "the blue one")


async def test_an_early_approval_for_other_arguments_is_not_applied(
    scripted_agent: ScriptedHarness,
) -> None:
    handle, release = await held_call(
        scripted_agent, sm.call("side_effect", ARGS, id="s1"), tools=["side_effect"]
    )
    other = approvals.args_digest({"label": "something else"})
    await signalled(handle, "approve", {"call_id": "s1", "args_digest": other})
    release.set()

    [pending] = await wait_for_pending(handle)  # the call waits: the kept approval did not fit
    assert (pending.call_id, pending.args_digest) == ("s1", DIGEST)
    assert executions[f"{handle.id}/1/s1"] == 0
    await handle.signal("approve", {"call_id": "s1", "args_digest": DIGEST})
    result = await finished(handle)
    assert [s.status for s in result.steps] == ["ok"]
    assert executions[f"{handle.id}/1/s1"] == 1


async def test_approve_all_with_nothing_pending_is_not_kept(
    scripted_agent: ScriptedHarness,
) -> None:
    handle, release = await held_call(
        scripted_agent, sm.call("side_effect", ARGS, id="s1"), tools=["side_effect"]
    )
    await signalled(handle, "approve", {"call_id": "*"})
    release.set()

    [pending] = await wait_for_pending(handle)  # `*` decided nothing the person had not seen
    assert pending.call_id == "s1"
    assert executions[f"{handle.id}/1/s1"] == 0
    await handle.signal("approve", {"call_id": "*"})  # now it names what is shown
    assert [s.status for s in (await finished(handle)).steps] == ["ok"]


async def test_decide_before_its_call_waits_is_refused_and_can_be_sent_again(
    scripted_agent: ScriptedHarness,
) -> None:
    handle, release = await held_call(
        scripted_agent, sm.call("side_effect", ARGS, id="s1"), tools=["side_effect"]
    )
    update = {"call_id": "s1", "decision": "approve", "args_digest": DIGEST}
    with pytest.raises(WorkflowUpdateFailedError) as caught:
        await handle.execute_update("decide", update, result_type=HumanDecision)
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == DECISION_REFUSED
    assert "no pending call 's1'" in cause.message
    release.set()

    await wait_for_pending(handle)
    decision = await handle.execute_update("decide", update, result_type=HumanDecision)
    assert decision.outcome == "approved"
    assert [s.status for s in (await finished(handle)).steps] == ["ok"]
    assert executions[f"{handle.id}/1/s1"] == 1


# -- the rules alone ---------------------------------------------------------------------------


def test_only_a_named_call_neither_pending_nor_decided_is_kept() -> None:
    assert approvals.is_early("c1", {}, {})
    assert not approvals.is_early("*", {}, {})
    pending = {"c1": object()}
    assert not approvals.is_early("c1", pending, {})  # type: ignore[arg-type]
    decided = {"c1": object()}
    assert not approvals.is_early("c1", {}, decided)  # type: ignore[arg-type]


def test_the_kept_decisions_are_bounded_oldest_first_and_the_newest_per_call_wins() -> None:
    kept: dict[str, approvals.EarlySignal] = {}
    for n in range(approvals.MAX_EARLY_DECISIONS + 5):
        kept = approvals.keep_early(kept, ApproveSignal(call_id=f"c{n}"))
    assert len(kept) == approvals.MAX_EARLY_DECISIONS
    assert next(iter(kept)) == "c5"  # the five oldest went
    kept = approvals.keep_early(kept, RejectSignal(call_id="c7", reason="changed my mind"))
    assert isinstance(kept["c7"], RejectSignal) and list(kept)[-1] == "c7"
    assert len(approvals.keep_early({}, ReplySignal(call_id="q", text="x"))) == 1
