"""Approvals and questions on a real Temporal server: approve, reject, approve-all, edit,
mixed parallel calls, predicates, ask_user, refusals, and a worker restart while waiting."""

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

from activities.openai_model import OpenAIChatModel
from contracts.agent_result import AgentResult
from contracts.agent_status import AgentStatus
from contracts.approvals import DECISION_REFUSED, HumanDecision
from loop.approvals import args_digest
from tests import fake_openai as fake
from tests.agent_test_tools import executions
from tests.conftest import FAKE_MODEL, SECRET_API_KEY, AgentHarness, started_workers
from tests.hitl_support import wait_for_pending


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


async def test_approve_runs_the_tool_and_records_who(agent: AgentHarness) -> None:
    args = {"path": "hello.txt", "content": "hi there", "overwrite": True}
    agent.fake.enqueue(fake.tool_calls(fake.call("write_file", args, id="w1")), fake.text("done"))
    handle = await agent.start({"prompt": "write it", "tools": ["write_file"]})

    [pending] = await wait_for_pending(handle)
    assert (pending.kind, pending.call_id, pending.tool, pending.args) == (
        "approval", "w1", "write_file", args,
    )  # fmt: skip
    assert pending.args_digest == args_digest(args)
    assert pending.command == (
        f"temporal workflow signal --workflow-id {handle.id} --name approve "
        """--input '{"call_id": "w1"}'"""
    )
    status = await handle.query("status", result_type=AgentStatus)
    assert status.phase == "waiting_for_human"
    assert not (agent.workspace / "hello.txt").exists()
    description = await handle.describe()
    details = description.raw_description.workflow_extended_info  # current details are set
    assert details is not None

    await handle.signal("approve", {"call_id": "w1", "by": "alice", "comment": "fine"})
    result = await handle.result()
    assert (agent.workspace / "hello.txt").read_text() == "hi there"
    [step] = result.steps
    assert step.status == "ok" and step.observation == "wrote 8 bytes to hello.txt"
    assert step.human is not None
    assert (step.human.outcome, step.human.by, step.human.comment) == ("approved", "alice", "fine")


async def test_reject_tells_the_model_why_and_does_not_run(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "x.txt", "content": "x"}, id="w1")),
        fake.text("ok, I will not"),
    )
    handle = await agent.start({"prompt": "write", "tools": ["write_file"]})
    await wait_for_pending(handle)
    await handle.signal("reject", {"call_id": "w1", "reason": "not that file", "by": "bob"})
    result = await handle.result()

    assert not (agent.workspace / "x.txt").exists()
    [step] = result.steps
    assert step.status == "rejected"
    assert step.observation == (
        "Rejected by bob: not that file. The write_file call was not run; "
        "find another way or answer without it."
    )
    assert tool_results(agent.fake.requests[1].body) == {"w1": step.observation}
    assert step.human is not None and step.human.reason == "not that file"


async def test_approve_all_with_star(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(
            fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"),
            fake.call("write_file", {"path": "b.txt", "content": "b"}, id="w2"),
        ),
        fake.text("both written"),
    )
    handle = await agent.start({"prompt": "write two", "tools": ["write_file"]})
    await wait_for_pending(handle, count=2)
    await handle.signal("approve", {"call_id": "*", "by": "carol"})
    result = await handle.result()
    assert [s.status for s in result.steps] == ["ok", "ok"]
    assert (agent.workspace / "a.txt").read_text() + (agent.workspace / "b.txt").read_text() == "ab"
    assert all(s.human and s.human.by == "carol" for s in result.steps)


async def test_approve_with_edited_arguments(agent: AgentHarness) -> None:
    original = {"path": "draft.txt", "content": "rm -rf /", "overwrite": True}
    agent.fake.enqueue(fake.tool_calls(fake.call("write_file", original, id="w1")), fake.text("ok"))
    handle = await agent.start({"prompt": "write", "tools": ["write_file"]})
    await wait_for_pending(handle)
    edited = {"path": "safe.txt", "content": "echo hello"}
    await handle.signal("approve", {"call_id": "w1", "args": edited, "by": "dana"})
    result = await handle.result()

    assert not (agent.workspace / "draft.txt").exists()
    assert (agent.workspace / "safe.txt").read_text() == "echo hello"
    [step] = result.steps
    executed = {"path": "safe.txt", "content": "echo hello", "overwrite": True}
    assert step.args == executed
    assert step.human is not None
    assert (step.human.outcome, step.human.model_args, step.human.executed_args) == (
        "edited", original, executed,
    )  # fmt: skip
    told = tool_results(agent.fake.requests[1].body)["w1"]
    assert told.startswith("Note: a reviewer changed the arguments")
    assert told.endswith("wrote 10 bytes to safe.txt")


async def test_mixed_parallel_calls(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(
            fake.call("write_file", {"path": "yes.txt", "content": "y"}, id="yes"),
            fake.call("write_file", {"path": "no.txt", "content": "n"}, id="no"),
            fake.call("calculator", {"expression": "6*7"}, id="calc"),
        ),
        fake.text("mixed"),
    )
    handle = await agent.start({"prompt": "mixed", "tools": ["write_file", "calculator"]})
    await wait_for_pending(handle, count=2)
    await handle.signal("approve", {"call_id": "yes"})
    await handle.signal("reject", {"call_id": "no", "reason": "no"})
    result = await handle.result()

    assert [(s.call_id, s.status) for s in result.steps] == [
        ("yes", "ok"), ("no", "rejected"), ("calc", "ok"),
    ]  # fmt: skip
    assert (agent.workspace / "yes.txt").exists() and not (agent.workspace / "no.txt").exists()
    # The call that needed no approval ran at once, before anyone decided.
    events = (await handle.fetch_history()).events
    kinds = [e.event_type for e in events]
    first_signal = kinds.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED in kinds[5:first_signal][2:]
    assert list(tool_results(agent.fake.requests[1].body)) == ["yes", "no", "calc"]


async def test_predicate_decides_which_calls_need_approval(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(
            fake.call("pay", {"amount": 50, "to": "ann"}, id="small"),
            fake.call("pay", {"amount": 500, "to": "ben"}, id="big"),
        ),
        fake.text("paid"),
    )
    handle = await agent.start({"prompt": "pay", "tools": ["pay"]})
    [pending] = await wait_for_pending(handle)
    assert pending.call_id == "big"
    await handle.signal("approve", {"call_id": "big"})
    result = await handle.result()
    assert [s.observation for s in result.steps] == ["paid 50 to ann", "paid 500 to ben"]
    assert result.steps[0].human is None and result.steps[1].human is not None


async def test_ask_user_round_trip(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("ask_user", {"question": "Which colour?"}, id="q1")),
        fake.text("You like blue."),
    )
    handle = await agent.start({"prompt": "pick my colour", "tools": ["ask_user"]})
    [pending] = await wait_for_pending(handle)
    assert (pending.kind, pending.question) == ("question", "Which colour?")
    assert "--name reply" in pending.command
    await handle.signal("reply", {"call_id": "*", "text": "blue", "by": "erin"})
    result = await handle.result()
    assert result.answer == "You like blue."
    assert tool_results(agent.fake.requests[1].body) == {"q1": "blue"}
    assert result.steps[0].human is not None and result.steps[0].human.reply == "blue"
    # A question is answered in the workflow: no activity was scheduled for it.
    history = await handle.fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert scheduled == ["call_model", "call_model"]


async def test_decide_update_refuses_bad_decisions_without_history(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(
            fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"),
            fake.call("ask_user", {"question": "why?"}, id="q1"),
        ),
        fake.text("done"),
    )
    handle = await agent.start({"prompt": "x", "tools": ["write_file", "ask_user"]})
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


async def test_bad_signals_are_logged_and_ignored(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(
            fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"),
            fake.call("ask_user", {"question": "sure?"}, id="q1"),
        ),
        fake.text("done"),
    )
    handle = await agent.start({"prompt": "x", "tools": ["write_file", "ask_user"]})
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
    temporal_env: WorkflowEnvironment, fake_model: fake.FakeOpenAIServer, tmp_path: Any
) -> None:
    fake_model.enqueue(
        fake.tool_calls(fake.call("side_effect", {"label": "launch"}, id="s1")),
        fake.text("launched"),
    )
    model = OpenAIChatModel(
        api_key=SECRET_API_KEY, base_url=fake_model.base_url, default_model=FAKE_MODEL
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
    await model.close()
    assert result.answer == "launched"
    assert executions[f"{workflow_id}/1/s1"] == 1
