"""Approvals and questions on a real Temporal server: approve, reject, approve-all, edit,
mixed parallel calls, predicates, ask_user, refusals, and a worker restart while waiting.

Loop logic, so the worker's model is the scripted in-memory one (no HTTP hop)."""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import DECISION_REFUSED, HumanDecision
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.loop.approvals import args_digest
from tests import scripted_model as sm
from tests.agent_test_tools import executions
from tests.conftest import FAKE_MODEL, ScriptedHarness, started_workers
from tests.hitl_support import wait_for_pending


def tool_results(request: ModelRequest) -> dict[str | None, str | None]:
    return {m.tool_call_id: m.content for m in request.messages if m.role == "tool"}


async def test_approve_runs_the_tool_and_records_who(scripted_agent: ScriptedHarness) -> None:
    args = {"path": "hello.txt", "content": "hi there", "overwrite": True}
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("write_file", args, id="w1")), sm.text("done")
    )
    handle = await scripted_agent.start({"prompt": "write it", "tools": ["write_file"]})

    [pending] = await wait_for_pending(handle)
    assert (pending.kind, pending.call_id, pending.tool, pending.args) == (
        "approval", "w1", "write_file", args,
    )  # fmt: skip
    assert pending.args_digest == args_digest(args)
    assert pending.command == (
        f"temporal workflow signal --workflow-id {handle.id} --name approve "
        """--input '{"call_id": "w1"}' """
        f"--address {scripted_agent.client.service_client.config.target_host}"  # (issue 31, item 8)
    )
    status = await handle.query("status", result_type=AgentStatus)
    assert status.phase == "waiting_for_human"
    assert not (scripted_agent.workspace / "hello.txt").exists()
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert "waiting for approval" in details and pending.command in details

    await handle.signal("approve", {"call_id": "w1", "by": "alice", "comment": "fine"})
    result = await handle.result()
    assert (scripted_agent.workspace / "hello.txt").read_text() == "hi there"
    [step] = result.steps
    assert step.status == "ok" and step.observation == "wrote 8 bytes to hello.txt"
    assert step.human is not None
    assert (step.human.outcome, step.human.by, step.human.comment) == ("approved", "alice", "fine")


async def test_reject_tells_the_model_why_and_does_not_run(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("write_file", {"path": "x.txt", "content": "x"}, id="w1")),
        sm.text("ok, I will not"),
    )
    handle = await scripted_agent.start({"prompt": "write", "tools": ["write_file"]})
    await wait_for_pending(handle)
    await handle.signal("reject", {"call_id": "w1", "reason": "not that file", "by": "bob"})
    result = await handle.result()

    assert not (scripted_agent.workspace / "x.txt").exists()
    [step] = result.steps
    assert step.status == "rejected"
    assert step.observation == (
        "Rejected by bob: not that file. The write_file call was not run; "
        "find another way or answer without it."
    )
    assert tool_results(scripted_agent.model.requests[1]) == {"w1": step.observation}
    assert step.human is not None and step.human.reason == "not that file"


async def test_approve_all_with_star(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"),
            sm.call("write_file", {"path": "b.txt", "content": "b"}, id="w2"),
        ),
        sm.text("both written"),
    )
    handle = await scripted_agent.start({"prompt": "write two", "tools": ["write_file"]})
    await wait_for_pending(handle, count=2)
    await handle.signal("approve", {"call_id": "*", "by": "carol"})
    result = await handle.result()
    assert [s.status for s in result.steps] == ["ok", "ok"]
    assert (scripted_agent.workspace / "a.txt").read_text() + (
        scripted_agent.workspace / "b.txt"
    ).read_text() == "ab"
    assert all(s.human and s.human.by == "carol" for s in result.steps)


async def test_approve_with_edited_arguments(scripted_agent: ScriptedHarness) -> None:
    original = {"path": "draft.txt", "content": "rm -rf /", "overwrite": True}
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("write_file", original, id="w1")), sm.text("ok")
    )
    handle = await scripted_agent.start({"prompt": "write", "tools": ["write_file"]})
    await wait_for_pending(handle)
    edited = {"path": "safe.txt", "content": "echo hello"}
    await handle.signal("approve", {"call_id": "w1", "args": edited, "by": "dana"})
    result = await handle.result()

    assert not (scripted_agent.workspace / "draft.txt").exists()
    assert (scripted_agent.workspace / "safe.txt").read_text() == "echo hello"
    [step] = result.steps
    executed = {"path": "safe.txt", "content": "echo hello", "overwrite": True}
    assert step.args == executed
    assert step.human is not None
    assert (step.human.outcome, step.human.model_args, step.human.executed_args) == (
        "edited", original, executed,
    )  # fmt: skip
    told = tool_results(scripted_agent.model.requests[1])["w1"] or ""
    assert told.startswith("Note: a reviewer changed the arguments")
    assert told.endswith("wrote 10 bytes to safe.txt")


async def test_mixed_parallel_calls(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("write_file", {"path": "yes.txt", "content": "y"}, id="yes"),
            sm.call("write_file", {"path": "no.txt", "content": "n"}, id="no"),
            sm.call("calculator", {"expression": "6*7"}, id="calc"),
        ),
        sm.text("mixed"),
    )
    handle = await scripted_agent.start({"prompt": "mixed", "tools": ["write_file", "calculator"]})
    await wait_for_pending(handle, count=2)
    await handle.signal("approve", {"call_id": "yes"})
    await handle.signal("reject", {"call_id": "no", "reason": "no"})
    result = await handle.result()

    assert [(s.call_id, s.status) for s in result.steps] == [
        ("yes", "ok"), ("no", "rejected"), ("calc", "ok"),
    ]  # fmt: skip
    assert (scripted_agent.workspace / "yes.txt").exists() and not (
        scripted_agent.workspace / "no.txt"
    ).exists()
    # The call that needed no approval ran at once, before anyone decided.
    events = (await handle.fetch_history()).events
    kinds = [e.event_type for e in events]
    first_signal = kinds.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED in kinds[5:first_signal][2:]
    assert list(tool_results(scripted_agent.model.requests[1])) == ["yes", "no", "calc"]


async def test_predicate_decides_which_calls_need_approval(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("pay", {"amount": 50, "to": "ann"}, id="small"),
            sm.call("pay", {"amount": 500, "to": "ben"}, id="big"),
        ),
        sm.text("paid"),
    )
    handle = await scripted_agent.start({"prompt": "pay", "tools": ["pay"]})
    [pending] = await wait_for_pending(handle)
    assert pending.call_id == "big"
    await handle.signal("approve", {"call_id": "big"})
    result = await handle.result()
    assert [s.observation for s in result.steps] == ["paid 50 to ann", "paid 500 to ben"]
    assert result.steps[0].human is None and result.steps[1].human is not None


async def test_ask_user_round_trip(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("ask_user", {"question": "Which colour?"}, id="q1")),
        sm.text("You like blue."),
    )
    handle = await scripted_agent.start({"prompt": "pick my colour", "tools": ["ask_user"]})
    [pending] = await wait_for_pending(handle)
    assert (pending.kind, pending.question) == ("question", "Which colour?")
    assert "--name reply" in pending.command
    await handle.signal("reply", {"call_id": "*", "text": "blue", "by": "erin"})
    result = await handle.result()
    assert result.answer == "You like blue."
    assert tool_results(scripted_agent.model.requests[1]) == {"q1": "blue"}
    assert result.steps[0].human is not None and result.steps[0].human.reply == "blue"
    # A question is answered in the workflow: no activity was scheduled for it.
    history = await handle.fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    # (its definition as it starts, issue 37; nothing as it ends: `agent-definition-once`)
    assert scheduled == ["record_definition", "call_model", "call_model"]


async def test_decide_update_refuses_bad_decisions_without_history(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"),
            sm.call("ask_user", {"question": "why?"}, id="q1"),
        ),
        sm.text("done"),
    )
    handle = await scripted_agent.start({"prompt": "x", "tools": ["write_file", "ask_user"]})
    await wait_for_pending(handle, count=2)
    events_before = len((await handle.fetch_history()).events)

    refusals = {
        "no pending call 'nope'": {"call_id": "nope", "decision": "approve"},
        "is waiting for a reply, not for an approval": {"call_id": "q1", "decision": "approve"},
        "edited arguments for write_file are invalid: path:": {
            "call_id": "w1", "decision": "approve", "args": {"path": "", "content": "x"},
        },
        "args_digest does not match": {
            "call_id": "w1", "decision": "approve", "args_digest": "0" * 64,
        },
        "decide takes one call_id": {"call_id": "*", "decision": "approve"},
        "decision: Input should be 'approve' or 'reject'": {"call_id": "w1", "decision": "maybe"},
    }  # fmt: skip
    for message, payload in refusals.items():
        with pytest.raises(WorkflowUpdateFailedError) as caught:
            await handle.execute_update("decide", payload, result_type=HumanDecision)
        cause = caught.value.cause
        assert isinstance(cause, ApplicationError)
        assert cause.type == DECISION_REFUSED
        assert message in cause.message
    # Refused updates leave no trace in history.
    assert len((await handle.fetch_history()).events) == events_before

    decision = await handle.execute_update(
        "decide",
        {"call_id": "w1", "decision": "reject", "reason": "later", "by": "fay"},
        result_type=HumanDecision,
    )
    assert (decision.outcome, decision.by, decision.reason) == ("rejected", "fay", "later")
    with pytest.raises(WorkflowUpdateFailedError) as again:
        await handle.execute_update(
            "decide", {"call_id": "w1", "decision": "approve"}, result_type=HumanDecision
        )
    assert "already decided" in str(again.value.cause)
    await handle.signal("reply", {"call_id": "q1", "text": "because"})
    result = await handle.result()
    assert [s.status for s in result.steps] == ["rejected", "ok"]


async def test_bad_signals_are_logged_and_ignored(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"),
            sm.call("ask_user", {"question": "sure?"}, id="q1"),
        ),
        sm.text("done"),
    )
    handle = await scripted_agent.start({"prompt": "x", "tools": ["write_file", "ask_user"]})
    await wait_for_pending(handle, count=2)
    await handle.signal("approve", {"call_id": "unknown"})
    await handle.signal("approve", {"call_id": "q1"})  # an approval aimed at a question
    await handle.signal("reply", {"call_id": "w1", "text": "yes"})  # a reply aimed at an approval
    await handle.signal("approve", {"call_id": "w1", "args": {"path": 5}})  # invalid edit
    await handle.signal("approve", {"wrong": "shape"})
    await handle.signal("approve", "not even an object")
    pending = await wait_for_pending(handle, count=2)
    assert {p.call_id for p in pending} == {"w1", "q1"}  # nothing was decided, the run goes on

    await handle.signal("approve", {"call_id": "w1"})
    await handle.signal("approve", {"call_id": "w1"})  # a second decision: ignored
    await handle.signal("reply", {"call_id": "q1", "text": "yes"})
    result = await handle.result()
    assert [s.status for s in result.steps] == ["ok", "ok"]
    # A decision after the run ended is refused by the server.
    with pytest.raises(RPCError, match="already completed"):
        await handle.signal("approve", {"call_id": "w1"})


async def test_worker_restart_while_waiting_runs_the_tool_exactly_once(
    temporal_env: WorkflowEnvironment, tmp_path: Any
) -> None:
    model = sm.ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(
        sm.tool_calls(sm.call("side_effect", {"label": "launch"}, id="s1")),
        sm.text("launched"),
    )
    workflow_id = f"restart-{uuid.uuid4()}"
    client = temporal_env.client
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, tmp_path)
        handle = await client.start_workflow(
            "AgentWorkflow",
            {"prompt": "launch", "tools": ["side_effect"]},
            id=workflow_id,
            task_queue=queue,
            result_type=AgentResult,
        )
        await wait_for_pending(handle)
    # The first worker is gone. The decision arrives while no worker runs.
    await handle.signal("approve", {"call_id": "s1", "by": "gus"})
    assert executions[f"{workflow_id}/1/s1"] == 0
    async with AsyncExitStack() as stack:
        queue2 = await started_workers(stack, client, model, tmp_path, task_queue=queue)
        assert queue2 == queue
        result = await handle.result()
    assert result.answer == "launched"
    assert executions[f"{workflow_id}/1/s1"] == 1
