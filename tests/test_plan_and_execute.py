"""Plan-and-execute mode: a typed plan from a planning call, each step a child run told the
earlier results, replanning after a failed step, a final synthesis; plan approval (approve,
reject with a reason, edit_plan, timeout); the plan in status, details and the result. Real
worker and server; one scripted model answers planner, steps and synthesis."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError, WorkflowUpdateStage
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.messages import SteerMessage
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.contracts.plan import Plan, PlanState
from durable_agents.contracts.session import TurnResult
from durable_agents.loop.plan import (
    checklist,
    new_plan,
    read_plan,
    revised,
    step_task,
    with_notes,
    with_status,
)
from testkit.eventually import eventually
from tests.conftest import FAKE_MODEL, ScriptedHarness, activity_types, started_workers
from tests.scripted_model import Completion, ScriptedChatModel, call, text, tool_calls

PLAN = {"steps": [{"goal": "Compute 6*7"}, {"goal": "Add 8 to it"}]}


def plan_call(plan: dict[str, Any] = PLAN, id: str = "p") -> Completion:
    return tool_calls(call("submit_plan", plan, id=id))


def step_of(request: ModelRequest) -> str | None:
    """The goal a step's run was given (None for planner and synthesis calls)."""
    prompt = next((m.content or "" for m in request.messages if m.role == "user"), "")
    marker = next((line for line in prompt.splitlines() if line.startswith("Your step")), None)
    return marker.split(": ", 1)[1] if marker else None


def script(fail_first_add: bool = False) -> Any:
    empties = {"left": 2 if fail_first_add else 0}

    def answer(request: ModelRequest) -> Completion | str:
        if request.purpose == "plan":
            if "failed" in (request.messages[-1].content or ""):
                return plan_call({"steps": [{"goal": "Add 8 to 42 with the calculator"}]}, "p2")
            return plan_call()
        if request.purpose == "synthesis":
            return "Final: " + " | ".join(
                line for line in (request.messages[-1].content or "").splitlines() if ". " in line
            )
        goal = step_of(request)
        tool_results = [m for m in request.messages if m.role == "tool"]
        if goal == "Compute 6*7":
            if not tool_results:
                return tool_calls(call("calculator", {"expression": "6*7"}, id="c1"))
            return "42"
        if goal == "Add 8 to it" and empties["left"]:
            empties["left"] -= 1
            return text("")  # empty twice: the step stops with empty_answer
        if not tool_results:
            return tool_calls(call("calculator", {"expression": "42+8"}, id="c2"))
        return "50"

    return answer


# --- pure --------------------------------------------------------------------------------------


def test_the_checklist_marks_each_step() -> None:
    state = new_plan(Plan.model_validate({"steps": [{"goal": g} for g in "abcd"]}))
    state = with_status(with_status(with_status(state, 0, "done"), 1, "failed"), 2, "running")
    assert checklist(state) == "✓ 1. a\n✗ 2. b\n→ 3. c\n· 4. d"


def test_a_revision_keeps_the_steps_done() -> None:
    state = with_status(new_plan(Plan.model_validate(PLAN)), 0, "done")
    later = revised(state, Plan.model_validate({"steps": [{"goal": "x"}, {"goal": "y"}]}))
    assert [s.goal for s in later.steps] == ["Compute 6*7", "x", "y"]
    assert later.status == ["done", "pending", "pending"]
    assert (later.replans, len(later.revisions)) == (1, 2)


def test_plans_are_validated() -> None:
    assert isinstance(read_plan(json.dumps(PLAN)), Plan)
    assert "at least 1 item" in str(read_plan('{"steps": []}'))
    assert "not valid JSON" in str(read_plan("{"))


# --- runs --------------------------------------------------------------------------------------


async def test_plan_then_each_step_as_a_child_then_synthesis(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(script())
    result, handle = await scripted_agent.run({"prompt": "6*7 then +8", "mode": "plan_and_execute"})

    assert result.stop_reason == "completed"
    assert result.answer.startswith("Final: 1. Compute 6*7 (done): 42 | 2. Add 8 to it (done): 50")
    plan = result.plan
    assert plan is not None and plan.status == ["done", "done"]
    assert [o.workflow_id for o in plan.outcomes] == [f"{handle.id}/step-1", f"{handle.id}/step-2"]
    second = next(r for r in scripted_agent.model.requests if step_of(r) == "Add 8 to it")
    assert "1. Compute 6*7: 42" in (second.messages[1].content or "")  # earlier results passed
    assert [c.purpose for c in result.model_calls] == ["plan", "synthesis"]
    assert await activity_types(handle) == ["call_model", "call_model"]  # steps are child runs
    child = scripted_agent.client.get_workflow_handle(
        f"{handle.id}/step-1", result_type=AgentResult
    )
    assert (await child.result()).answer == "42"


async def test_a_failed_step_is_replanned(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.set_handler(script(fail_first_add=True))
    result, _ = await scripted_agent.run({"prompt": "6*7 then +8", "mode": "plan_and_execute"})

    plan = result.plan
    assert plan is not None and plan.replans == 1 and len(plan.revisions) == 2
    assert [o.status for o in plan.outcomes] == ["done", "failed", "done"]
    assert [s.goal for s in plan.steps] == ["Compute 6*7", "Add 8 to 42 with the calculator"]
    assert plan.status == ["done", "done"]
    assert "50" in result.answer


async def test_no_replans_left_goes_on_to_the_synthesis(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.set_handler(script(fail_first_add=True))
    result, _ = await scripted_agent.run(
        {"prompt": "6*7 then +8", "mode": "plan_and_execute", "max_replans": 0}
    )
    plan = result.plan
    assert plan is not None and plan.replans == 0 and plan.status == ["done", "failed"]
    assert "2. Add 8 to it (failed)" in result.answer


async def status_plan(handle: Any) -> PlanState | None:
    status = await handle.query("status", result_type=AgentStatus)
    return status.plan


async def test_the_plan_waits_for_approval_and_can_be_edited(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(script())
    handle = await scripted_agent.start(
        {"prompt": "6*7 then +8", "mode": "plan_and_execute", "plan_approval": True}
    )
    [request] = await eventually(
        lambda: handle.query("pending_approvals", result_type=list[PendingRequest]),
        what="the plan waiting for approval",
    )
    assert (request.kind, request.tool, request.args) == ("plan", "plan", PLAN)
    assert "--name approve" in request.command
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert "- · 1. Compute 6*7" in details and "waiting for approval of the plan" in details

    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update("edit_plan", {"steps": []})
    assert isinstance(refused.value.cause, ApplicationError)
    assert "steps: List should have at least 1 item" in refused.value.cause.message

    decision = await handle.execute_update(
        "edit_plan", {"steps": [{"goal": "Compute 6*7"}], "by": "carol"}, result_type=HumanDecision
    )
    assert (decision.outcome, decision.by) == ("edited", "carol")
    result = await handle.result()
    assert result.plan is not None and [s.goal for s in result.plan.steps] == ["Compute 6*7"]
    assert result.plan.approved and len(result.plan.revisions) == 2


async def test_a_rejected_plan_is_replanned_then_stops(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.set_handler(script())
    handle = await scripted_agent.start(
        {
            "prompt": "6*7 then +8",
            "mode": "plan_and_execute",
            "plan_approval": True,
            "max_replans": 1,
        }
    )
    for revision in (1, 2):
        await eventually(_plan_pending(handle, f"plan-{revision}"), what=f"plan {revision}")
        await handle.signal("reject", {"call_id": f"plan-{revision}", "reason": "too long"})
    result = await handle.result()
    assert result.stop_reason == "plan_rejected"
    assert result.answer == "The plan was not approved: too long"
    planner = [r for r in scripted_agent.model.requests if r.purpose == "plan"]
    assert len(planner) == 2 and "Feedback: too long" in (planner[1].messages[-1].content or "")


def _plan_pending(handle: Any, call_id: str) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        pending = await handle.query("pending_approvals", result_type=list[PendingRequest])
        return any(p.call_id == call_id for p in pending)

    return probe


async def test_edit_plan_without_a_plan_waiting_is_refused(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(script())
    handle = await scripted_agent.start({"prompt": "6*7", "mode": "plan_and_execute"})
    await handle.result()
    with pytest.raises(Exception, match=r"completed|no plan"):
        await handle.execute_update("edit_plan", {"steps": [{"goal": "x"}]})


async def test_an_unknown_mode_is_refused(scripted_agent: ScriptedHarness) -> None:
    handle = await scripted_agent.start({"prompt": "x", "mode": "tree_of_thought"})
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    assert "mode: Input should be 'react' or 'plan_and_execute'" in str(failure.value.cause)


@pytest.mark.parametrize(
    ("action", "stop_reason"), [("approve", "completed"), ("reject", "plan_rejected")]
)
async def test_a_plan_nobody_approves_times_out_as_approvals_do(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path, action: str, stop_reason: str
) -> None:
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    model.set_handler(script())
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, time_skipping_env.client, model, tmp_path)
        result = await time_skipping_env.client.execute_workflow(
            "AgentWorkflow",
            {
                "prompt": "6*7 then +8",
                "mode": "plan_and_execute",
                "plan_approval": True,
                "approval_timeout_seconds": 24 * 3600,
                "approval_timeout_action": action,
            },
            id=f"plan-timeout-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
    assert result.stop_reason == stop_reason
    if action == "reject":
        assert "timed out" in result.answer or "not approved" in result.answer


async def test_a_session_turns_plan_is_edited_at_the_session(
    scripted_agent: ScriptedHarness,
) -> None:
    """A planning turn inside its session: the plan waits at the session, `edit_plan` there
    replaces it, each step runs as `<session>/turn-1/step-<n>`, and the turn answers."""
    scripted_agent.model.set_handler(script())
    session_id = f"session-{uuid.uuid4()}"
    session = await scripted_agent.client.start_workflow(
        "SessionWorkflow",
        {"agent": {"mode": "plan_and_execute", "plan_approval": True}},
        id=session_id,
        task_queue=scripted_agent.task_queue,
    )
    update = await session.start_update(
        "send",
        {"text": "6*7 then +8"},
        wait_for_stage=WorkflowUpdateStage.ACCEPTED,
        result_type=TurnResult,
    )
    [request] = await eventually(
        lambda: session.query("pending_approvals", result_type=list[PendingRequest]),
        what="the plan waiting at the session",
    )
    assert request.kind == "plan" and f"--workflow-id {session_id} " in request.command
    decision = await session.execute_update(
        "edit_plan", {"steps": [{"goal": "Compute 6*7"}], "by": "carol"}, result_type=HumanDecision
    )
    assert decision.outcome == "edited"
    result = await update.result()
    assert result.stop_reason == "completed" and result.answer
    step = scripted_agent.client.get_workflow_handle(f"{session_id}/turn-1/step-1")
    assert (await step.describe()).parent_id == session_id


async def test_steering_a_plan_reaches_the_next_steps_and_the_final_answer(
    scripted_agent: ScriptedHarness,
) -> None:
    """A `steer` message sent while the plan waits (or runs) becomes a note of the plan: every
    later step's task and the synthesis carry it, and it no longer shows as waiting."""
    scripted_agent.model.set_handler(script())
    handle = await scripted_agent.start(
        {"prompt": "6*7 then +8", "mode": "plan_and_execute", "plan_approval": True}
    )
    await eventually(
        lambda: handle.query("pending_approvals", result_type=list[PendingRequest]),
        what="the plan waiting for approval",
    )
    await handle.execute_update("steer", {"text": "Show your working.", "by": "ann"})
    await handle.signal("approve", {"call_id": "*"})
    result = await handle.result()
    assert result.plan is not None and result.plan.notes == ["ann: Show your working."]
    tasks = [
        next(m.content or "" for m in r.messages if m.role == "user")
        for r in scripted_agent.model.requests
        if r.purpose in ("turn", "synthesis")
    ]
    assert tasks and all("ann: Show your working." in t for t in tasks)
    status = await handle.query("status", result_type=AgentStatus)
    assert status.steering == []


def test_a_plans_notes_are_in_every_later_step_task() -> None:
    state = new_plan(Plan.model_validate(PLAN))
    assert "Messages from people" not in step_task("p", state, 0)
    noted = with_notes(state, [SteerMessage(text="Use metric units.")])
    assert with_notes(noted, []) is noted
    task = step_task("p", noted, 1)
    assert task.index("the user: Use metric units.") < task.index("Your step (2 of 2)")
