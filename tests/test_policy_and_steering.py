"""A run's approval policy (ask / auto / deny by tool-name glob, the worker's permission for
`auto` over a tool's own approval) and steering a running agent (`steer` signal and update,
forwarded by sessions, `agent steer`). Real worker and server, scripted model."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.errors import INVALID_INPUT
from durable_agents.contracts.messages import SteerMessage
from durable_agents.contracts.policy import ApprovalPolicy, ApprovalRule, WorkerPolicy
from durable_agents.loop.policy import matching_rule, overridden_approvals, verdict
from durable_agents.tools.catalog import REGISTRY
from testkit.eventually import eventually
from tests.conftest import (
    FAKE_MODEL,
    ScriptedHarness,
    activity_types,
    local_activities,
    started_workers,
)
from tests.scripted_model import ScriptedChatModel, call, gate, text, tool_calls
from tests.test_cli_run import AgentCli

WRITE = {"path": "a.txt", "content": "x"}


def policy(*rules: tuple[str, str]) -> dict[str, Any]:
    return {"rules": [{"tools": glob, "action": action} for glob, action in rules]}


# --- pure --------------------------------------------------------------------------------------


def test_the_first_matching_rule_decides() -> None:
    rules = ApprovalPolicy(
        rules=[ApprovalRule(tools="time__*", action="auto"), ApprovalRule(tools="*", action="deny")]
    )
    assert str(matching_rule(rules, "time__get_current_time")) == "time__* → auto"
    assert str(matching_rule(rules, "calculator")) == "* → deny"
    assert matching_rule(None, "calculator") is None


def test_without_a_rule_the_tool_definition_decides() -> None:
    write_file = REGISTRY.get("write_file")
    calculator = REGISTRY.get("calculator")
    assert write_file is not None and calculator is not None
    assert verdict(None, write_file, "write_file", WRITE).action == "ask"
    assert verdict(None, calculator, "calculator", {"expression": "1"}).action == "auto"
    assert verdict(None, None, "time__x", {}).because == "tool definition"  # an MCP tool


def test_auto_over_a_tool_that_requires_approval_is_flagged() -> None:
    tools = REGISTRY.select(["write_file", "calculator"])
    rules = ApprovalPolicy(rules=[ApprovalRule(tools="*", action="auto")])
    assert overridden_approvals(rules, tools) == ["write_file (* → auto)"]
    asks = ApprovalPolicy(rules=[ApprovalRule(tools="*", action="ask")])
    assert overridden_approvals(asks, tools) == []


def test_a_rule_says_what_happens_to_a_repeat() -> None:
    write_file = REGISTRY.get("write_file")
    assert write_file is not None
    refuse = ApprovalPolicy.model_validate(
        {"rules": [{"tools": "write_*", "action": "ask", "repeat": "refuse"}]}
    )
    said = verdict(refuse, write_file, "write_file", WRITE)
    assert (said.action, said.repeat) == ("ask", "refuse")
    assert said.because == "policy rule write_* → ask, repeat → refuse"
    assert verdict(None, write_file, "write_file", WRITE).repeat == "flag"  # the default
    flag = ApprovalPolicy(rules=[ApprovalRule(tools="*", action="ask")])
    assert verdict(flag, write_file, "write_file", WRITE).repeat == "flag"
    assert "repeat" not in flag.model_dump_json()  # unset: left out of the JSON
    with pytest.raises(ValueError, match=r"rules\.0\.repeat"):
        ApprovalPolicy.model_validate({"rules": [{"tools": "*", "action": "ask", "repeat": "no"}]})


# --- policies in runs ----------------------------------------------------------------------------


async def test_a_deny_rule_keeps_write_file_from_ever_running(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        tool_calls(call("write_file", WRITE, id="w")), text("I was not allowed to write.")
    )
    result, handle = await scripted_agent.run(
        {"prompt": "write", "approval_policy": policy(("write_*", "deny"))}
    )

    [step] = result.steps
    assert (step.status, step.policy) == ("denied", "policy rule write_* → deny")
    assert step.observation.startswith("Error: denied by policy: write_* → deny")
    assert "write_file" not in await activity_types(handle)
    assert not (scripted_agent.workspace / "a.txt").exists()
    tool_message = scripted_agent.model.requests[1].messages[-1]
    assert "denied by policy" in (tool_message.content or "")


async def test_an_ask_rule_makes_any_tool_wait_for_a_person(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        tool_calls(call("calculator", {"expression": "6*7"}, id="c")), text("42")
    )
    handle = await scripted_agent.start(
        {"prompt": "calc", "approval_policy": policy(("calc*", "ask"), ("*", "deny"))}
    )
    pending = await eventually(
        lambda: handle.query("pending_approvals", result_type=list[PendingRequest]),
        what="the calculator call waiting for approval",
    )
    assert [p.tool for p in pending] == ["calculator"]
    await handle.signal("approve", {"call_id": "c", "by": "alice"})
    result = await handle.result()
    assert (result.steps[0].observation, result.steps[0].policy) == (
        "42",
        "policy rule calc* → ask",
    )
    # Approved, then run as the local activity it is (`local=True`): the approval is decided in
    # the workflow before the call runs, so a local tool is no way around it.
    assert await local_activities(handle) == [("calculator", '{"expression": "6*7"}')]


async def test_auto_over_required_approval_is_refused_without_the_worker(
    scripted_agent: ScriptedHarness,
) -> None:
    handle = await scripted_agent.start(
        {"prompt": "write", "approval_policy": policy(("write_file", "auto"))}
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == INVALID_INPUT
    assert "approval_policy: would run write_file (write_file → auto)" in cause.message
    assert "ALLOW_RUN_AUTO_APPROVE=true" in cause.message
    assert await activity_types(handle) == ["worker_policy"]  # asked, and in history
    assert scripted_agent.model.request_count == 0


@pytest.fixture
async def permissive_worker(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[tuple[str, ScriptedChatModel, Path]]:
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with AsyncExitStack() as stack:
        queue = await started_workers(
            stack,
            temporal_env.client,
            model,
            workspace,
            policy=WorkerPolicy(allow_run_auto_approve=True),
        )
        yield queue, model, workspace


async def test_auto_over_required_approval_runs_when_the_worker_allows(
    temporal_env: WorkflowEnvironment, permissive_worker: tuple[str, ScriptedChatModel, Path]
) -> None:
    queue, model, workspace = permissive_worker
    model.enqueue(tool_calls(call("write_file", WRITE, id="w")), text("written"))
    handle = await temporal_env.client.start_workflow(
        "AgentWorkflow",
        {"prompt": "write", "approval_policy": policy(("write_file", "auto"))},
        id=f"agent-{uuid.uuid4()}",
        task_queue=queue,
        result_type=AgentResult,
    )
    result = await handle.result()
    [step] = result.steps
    assert (step.status, step.human, step.policy) == ("ok", None, "policy rule write_file → auto")
    assert (workspace / "a.txt").read_text() == "x"


async def test_an_unknown_action_is_refused_naming_the_rule(
    scripted_agent: ScriptedHarness,
) -> None:
    handle = await scripted_agent.start(
        {"prompt": "x", "approval_policy": policy(("*", "ask"), ("write_*", "maybe"))}
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    assert "approval_policy.rules.1.action" in str(failure.value.cause)


# --- steering ------------------------------------------------------------------------------------


async def status_of(handle: Any) -> AgentStatus:
    status: AgentStatus = await handle.query("status", result_type=AgentStatus)
    return status


async def test_steering_reaches_the_next_model_call(scripted_agent: ScriptedHarness) -> None:
    release = asyncio.Event()
    scripted_agent.model.enqueue(
        gate(release, tool_calls(call("calculator", {"expression": "2+2"}, id="c"))),
        text("done, in French"),
    )
    handle = await scripted_agent.start({"prompt": "add"})
    await eventually(lambda: scripted_agent.model.request_count == 1, what="first model call")

    queued = await handle.execute_update(
        "steer", {"text": "Answer in French.", "by": "alice"}, result_type=list[SteerMessage]
    )
    await handle.signal("steer", {"text": "And be brief."})
    assert [s.text for s in queued] == ["Answer in French."]
    waiting = await eventually(lambda: status_of(handle), what="two steering messages queued")
    assert [s.text for s in waiting.steering][:1] == ["Answer in French."]
    release.set()
    await handle.result()

    second = scripted_agent.model.requests[1].messages
    steered = [m.content for m in second if m.role == "user"][-2:]
    assert steered == [
        "[New message from alice while you were working] Answer in French.",
        "[New message from the user while you were working] And be brief.",
    ]
    assert (await status_of(handle)).steering == []


async def test_empty_steering_is_refused(scripted_agent: ScriptedHarness) -> None:
    release = asyncio.Event()
    scripted_agent.model.enqueue(gate(release, text("ok")))
    handle = await scripted_agent.start({"prompt": "x"})
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update("steer", {"text": ""})
    assert isinstance(refused.value.cause, ApplicationError)
    assert "text" in refused.value.cause.message
    release.set()
    await handle.result()


@pytest.mark.parametrize("turns", ["inline", "child"])
async def test_a_session_forwards_steering_to_its_running_turn(
    scripted_agent: ScriptedHarness, turns: str
) -> None:
    release = asyncio.Event()
    scripted_agent.model.enqueue(
        gate(release, tool_calls(call("calculator", {"expression": "1"}, id="c"))), text("ok")
    )
    session_id = f"session-{uuid.uuid4()}"
    session = await scripted_agent.client.start_workflow(
        "SessionWorkflow", {"turns": turns}, id=session_id, task_queue=scripted_agent.task_queue
    )
    with pytest.raises(WorkflowUpdateFailedError):  # no turn is running yet
        await session.execute_update("steer", {"text": "too early"})
    await session.signal("send", {"text": "go"})
    await eventually(lambda: scripted_agent.model.request_count == 1, what="the turn's call")
    turn = await session.execute_update("steer", {"text": "Use metric units."}, result_type=str)
    if turns == "child":
        assert turn == f"{session_id}/turn-1"
        turn_handle = scripted_agent.client.get_workflow_handle(turn)
        await eventually(lambda: _steering_texts(turn_handle), what="the forwarded message")
    else:
        assert turn == session_id
        status = await session.query("turn_status", result_type=AgentStatus)
        assert [s.text for s in status.steering] == ["Use metric units."]
    release.set()
    await eventually(lambda: scripted_agent.model.request_count == 2, what="the next call")
    last_user = [m for m in scripted_agent.model.requests[1].messages if m.role == "user"][-1]
    assert last_user.content is not None and last_user.content.endswith("Use metric units.")


async def _steering_texts(handle: Any) -> list[str]:
    return [s.text for s in (await status_of(handle)).steering]


async def test_agent_steer_from_the_cli(
    scripted_agent: ScriptedHarness, temporal_env: WorkflowEnvironment
) -> None:
    release = asyncio.Event()
    scripted_agent.model.enqueue(gate(release, text("ok")), text("unused"))
    handle = await scripted_agent.start({"prompt": "x"})
    cli = AgentCli(temporal_env.client.service_client.config.target_host, scripted_agent.task_queue)

    done = await cli("steer", handle.id, "Stop and summarise.", "--by", "bob")
    assert done.code == 0, done
    assert f"steering message queued for the model's next call in {handle.id}" in done.out
    assert [s.by for s in (await status_of(handle)).steering] == ["bob"]
    release.set()
    await handle.result()

    ended = await cli("steer", handle.id, "too late")
    assert "has already ended" in ended.one_error_line()
