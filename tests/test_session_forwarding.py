"""A session whose turn runs as a child run (`turns: child`) takes decisions at its own id, as
someone driving with the Temporal CLI would send them: the signals (`approve`, `reject`,
`reply`) and the `decide` update are forwarded to the running turn, the update answers what
the turn answered (its decision, or its refusal with the turn's reason), and the session's
history records each forward."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import DECISION_REFUSED, HumanDecision
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness, ScriptedHarness
from tests.session_support import echo_model, wait_status
from tests.test_cli_approval_flow import Cli
from tests.test_plan_and_execute import script as plan_script


def write_model(body: dict[str, Any]) -> Any:
    """Asks to write `<n>.txt` for the message `write <n>`; answers every other message."""
    last = body["messages"][-1]
    if last["role"] == "user" and last["content"].startswith("write "):
        name = last["content"].removeprefix("write ")
        return fake.tool_calls(fake.call("write_file", {"path": f"{name}.txt", "content": name}))
    return echo_model(body)


async def forwards(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """What the session's current run handed to its child turns: `update <name> -> <turn>`
    for each `forward_to_turn` activity, `signal <name> -> <turn>` for each signal sent."""
    found = []
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name == "forward_to_turn":
                sent = json.loads(scheduled.input.payloads[0].data)
                found.append(f"update {sent['update']} -> {sent['workflow_id']}")
        if event.event_type == EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
            signal = event.signal_external_workflow_execution_initiated_event_attributes
            found.append(f"signal {signal.signal_name} -> {signal.workflow_execution.workflow_id}")
    return found


async def test_the_temporal_cli_decides_at_the_session_id(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = Cli(temporal_env.client.service_client.config.target_host)
    agent.fake.set_handler(write_model)
    session = f"cli-session-{uuid.uuid4()}"
    await cli(
        "workflow", "start", "--type", "SessionWorkflow", "--task-queue", agent.task_queue,
        "--workflow-id", session, "--input", '{"turns": "child"}',
    )  # fmt: skip
    await cli(
        "workflow", "signal", "--workflow-id", session, "--name", "send",
        "--input", '{"text": "write a"}',
    )  # fmt: skip

    async def one_pending() -> dict[str, Any]:
        answer = await cli.json(
            "workflow", "query", "--workflow-id", session, "--type", "pending_approvals"
        )
        [pending] = answer["queryResult"][0] or [None]
        assert pending is not None
        return pending

    pending = await eventually(one_pending, what="the turn's pending approval")
    turn = f"{session}/turn-1"
    call_id = pending["call_id"]

    refused = await cli(
        "workflow", "update", "execute", "--workflow-id", session, "--name", "decide",
        "--input", '{"call_id": "w9", "decision": "approve"}',
        ok=False,
    )  # fmt: skip
    # The turn's own reason, not "no turn is running inside the session: send it to ...".
    assert f"no pending call 'w9' (unknown or already decided); pending: {call_id}" in refused
    decided = await cli.json(
        "workflow", "update", "execute", "--workflow-id", session, "--name", "decide",
        "--input", json.dumps({"call_id": call_id, "decision": "approve", "by": "ops"}),
    )  # fmt: skip
    assert (decided["result"]["call_id"], decided["result"]["outcome"]) == (call_id, "approved")
    assert decided["result"]["by"] == "ops"

    handle = agent.client.get_workflow_handle(session)
    await wait_status(handle, lambda s: s.turns == 1 and s.state == "idle")
    assert (agent.workspace / "a.txt").read_text() == "a"
    assert await forwards(handle) == [f"update decide -> {turn}", f"update decide -> {turn}"]
    turn_result = await agent.client.get_workflow_handle(turn, result_type=AgentResult).result()
    [step] = turn_result.steps
    assert step.human is not None and step.human.by == "ops"  # the turn recorded it

    # The signals too, pasted as the session's details hand them out: a reject at the session.
    await cli(
        "workflow", "signal", "--workflow-id", session, "--name", "send",
        "--input", '{"text": "write b"}',
    )  # fmt: skip
    pending = await eventually(one_pending, what="the second turn's pending approval")
    await cli(
        "workflow", "signal", "--workflow-id", session, "--name", "reject",
        "--input", json.dumps({"call_id": pending["call_id"], "reason": "not b"}),
    )  # fmt: skip
    await wait_status(handle, lambda s: s.turns == 2 and s.state == "idle")
    assert not (agent.workspace / "b.txt").exists()
    assert (await forwards(handle))[-1] == f"signal reject -> {session}/turn-2"


async def test_a_client_gets_the_turns_answer_through_the_session(agent: AgentHarness) -> None:
    """From a client: a rejection through the session answers the turn's recorded decision; a
    second decision on the same call answers the turn's refusal, as the turn would."""
    agent.fake.set_handler(write_model)
    session = f"session-{uuid.uuid4()}"
    handle = await agent.client.start_workflow(
        "SessionWorkflow", {"turns": "child"}, id=session, task_queue=agent.task_queue
    )
    await handle.signal("send", {"text": "write c"})
    [pending] = (await wait_status(handle, lambda s: len(s.pending) == 1)).pending
    rejected = await handle.execute_update(
        "decide",
        {"call_id": pending.call_id, "decision": "reject", "reason": "no", "by": "ann"},
        result_type=HumanDecision,
    )
    assert (rejected.outcome, rejected.reason, rejected.by) == ("rejected", "no", "ann")
    with pytest.raises(WorkflowUpdateFailedError) as again:
        await handle.execute_update(
            "decide", {"call_id": pending.call_id, "decision": "approve"}, result_type=HumanDecision
        )
    cause = again.value.cause
    assert isinstance(cause, ApplicationError) and cause.type in (DECISION_REFUSED, "TurnEnded")
    await wait_status(handle, lambda s: s.turns == 1 and s.state == "idle")
    assert not (agent.workspace / "c.txt").exists()
    with pytest.raises(WorkflowUpdateFailedError) as idle:  # no turn: refused, nothing recorded
        await handle.execute_update(
            "decide", {"call_id": pending.call_id, "decision": "approve"}, result_type=HumanDecision
        )
    assert "no turn is running in the session" in str(idle.value.cause)


async def test_a_plan_edit_at_the_session_reaches_the_child_turn(
    scripted_agent: ScriptedHarness,
) -> None:
    """`edit_plan` too: refused with the turn's reason, then taken by the turn."""
    scripted_agent.model.set_handler(plan_script())
    session = f"plan-session-{uuid.uuid4()}"
    agent = {"mode": "plan_and_execute", "plan_approval": True}
    handle = await scripted_agent.client.start_workflow(
        "SessionWorkflow",
        {"turns": "child", "agent": agent},
        id=session,
        task_queue=scripted_agent.task_queue,
    )
    await handle.signal("send", {"text": "6*7 then +8"})
    await wait_status(handle, lambda s: len(s.pending) == 1)
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update("edit_plan", {"steps": []})
    assert "steps: List should have at least 1 item" in str(refused.value.cause)
    edited = await handle.execute_update(
        "edit_plan", {"steps": [{"goal": "Compute 6*7"}], "by": "carol"}, result_type=HumanDecision
    )
    assert (edited.outcome, edited.by) == ("edited", "carol")
    await wait_status(handle, lambda s: s.turns == 1 and s.state == "idle")
    turn = f"{session}/turn-1"
    assert await forwards(handle) == [f"update edit_plan -> {turn}"] * 2
    result = await scripted_agent.client.get_workflow_handle(turn, result_type=AgentResult).result()
    assert result.plan is not None and [s.goal for s in result.plan.steps] == ["Compute 6*7"]
