"""Sub-agents: agent profiles called as tools, each call a child AgentWorkflow; the child's
pending approvals answered at the parent; the parent's policy and budgets over its children;
cancellation and nesting limits. Real worker and server; one scripted model answers parent and
children (told apart by their system prompts)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.agents import AgentProfile
from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.errors import INVALID_INPUT
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.tools.agents import RESEARCHER
from testkit.eventually import eventually
from tests.catalog import TEST_CATALOG
from tests.conftest import ScriptedHarness, activity_types, local_activities
from tests.scripted_model import Completion, call, gate, text, tool_calls

WRITER = AgentProfile(
    name="writer",
    description="Writes files.",
    system_prompt="You are the WRITER.",
    tools=["write_file"],
    max_iterations=4,
)
NESTER = AgentProfile(
    name="nester",
    description="Hands the task to another nester.",
    system_prompt="You are a NESTER.",
    tools=[],
    agents=["nester"],
)
SLEEPER = AgentProfile(
    name="sleeper", description="Never answers.", system_prompt="You SLEEP.", tools=[]
)
for _profile in (WRITER, NESTER, SLEEPER):
    if TEST_CATALOG.agents.get(_profile.name) is None:
        TEST_CATALOG.agents.register(_profile)


def who(request: ModelRequest) -> str:
    system = request.messages[0].content or ""
    for name in ("WRITER", "NESTER", "SLEEP"):
        if name in system:
            return name
    return "researcher" if system == RESEARCHER.system_prompt else "parent"


def turns(request: ModelRequest) -> int:
    """How many tool results this agent has seen (0 on its first call)."""
    return sum(1 for m in request.messages if m.role == "tool")


def delegates_a_write(request: ModelRequest) -> Completion | str:
    """The parent hands the writer a write (call `d1`); the writer's `write_file` (`w1`, of
    `n.txt`) waits for a person; each answers with what its tool returned."""
    if who(request) == "WRITER":
        if turns(request) == 0:
            return tool_calls(call("write_file", {"path": "n.txt", "content": "hi"}, id="w1"))
        return f"writer: {last_tool_result(request)}"
    if turns(request) == 0:
        return tool_calls(call("writer", {"task": "write hi to n.txt"}, id="d1"))
    return "done"


def last_tool_result(request: ModelRequest) -> str:
    return next(m.content or "" for m in reversed(request.messages) if m.role == "tool")


async def test_a_profile_runs_as_a_child_workflow(scripted_agent: ScriptedHarness) -> None:
    def script(request: ModelRequest) -> Completion | str:
        if who(request) == "researcher":
            if turns(request) == 0:
                return tool_calls(call("calculator", {"expression": "6*7"}, id="r1"))
            return f"The researcher found {last_tool_result(request)}."
        if turns(request) == 0:
            return tool_calls(call("researcher", {"task": "What is 6*7?"}, id="d1"))
        return f"Delegated: {last_tool_result(request)}"

    scripted_agent.model.set_handler(script)
    result, handle = await scripted_agent.run({"prompt": "research 6*7", "agents": ["researcher"]})

    assert result.answer == "Delegated: The researcher found 42."
    [step] = result.steps
    child_id = f"{handle.id}/researcher-d1"
    assert (step.tool, step.child_workflow_id) == ("researcher", child_id)
    child = scripted_agent.client.get_workflow_handle(child_id, result_type=AgentResult)
    child_result = await child.result()
    assert await activity_types(child) == ["call_model", "call_model"]
    assert await local_activities(child) == [("calculator", '{"expression": "6*7"}')]
    assert "researcher" not in await activity_types(handle)  # a child workflow, not an activity
    # the child's tokens count toward the parent: 2 parent calls + 2 child calls
    assert result.usage.total_tokens == 2 * 15 + child_result.usage.total_tokens
    offered = next(t for t in scripted_agent.model.requests[0].tools if t.name == "researcher")
    assert offered.parameters["required"] == ["task"]
    description = await child.describe()
    assert description.parent_id == handle.id


async def test_a_childs_approval_is_answered_at_the_parent(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.set_handler(delegates_a_write)
    handle = await scripted_agent.start({"prompt": "write", "agents": ["writer"]})
    pending = await eventually(
        lambda: handle.query("pending_approvals", result_type=list[PendingRequest]),
        what="the child's write waiting at the parent",
    )
    [request] = pending
    assert (request.call_id, request.tool) == ("writer-d1/w1", "write_file")
    assert f"--workflow-id {handle.id} " in request.command
    status = await handle.query("status", result_type=AgentStatus)
    assert [p.call_id for p in status.pending] == ["writer-d1/w1"]

    decision = await handle.execute_update(
        "decide",
        {"call_id": "writer-d1/w1", "decision": "approve", "by": "alice"},
        result_type=HumanDecision,
    )
    assert (decision.outcome, decision.by) == ("approved", "alice")
    result = await handle.result()
    assert (scripted_agent.workspace / "n.txt").read_text() == "hi"
    child = scripted_agent.client.get_workflow_handle(
        f"{handle.id}/writer-d1", result_type=AgentResult
    )
    child_step = (await child.result()).steps[0]
    assert child_step.human is not None and child_step.human.by == "alice"
    assert result.answer == "done"
    assert await handle.query("pending_approvals", result_type=list[PendingRequest]) == []


async def test_a_signal_for_every_pending_approval_reaches_the_child(
    scripted_agent: ScriptedHarness,
) -> None:
    def script(request: ModelRequest) -> Completion | str:
        if who(request) == "WRITER":
            if turns(request) == 0:
                return tool_calls(call("write_file", {"path": "s.txt", "content": "x"}, id="w"))
            return "written"
        return tool_calls(call("writer", {"task": "t"}, id="d")) if turns(request) == 0 else "ok"

    scripted_agent.model.set_handler(script)
    handle = await scripted_agent.start({"prompt": "write", "agents": ["writer"]})
    await eventually(
        lambda: handle.query("pending_approvals", result_type=list[PendingRequest]),
        what="a pending approval",
    )
    await handle.signal("approve", {"call_id": "*", "by": "bob"})
    assert (await handle.result()).answer == "ok"
    assert (scripted_agent.workspace / "s.txt").read_text() == "x"


async def test_the_parents_deny_rule_binds_its_children(scripted_agent: ScriptedHarness) -> None:
    def script(request: ModelRequest) -> Completion | str:
        if who(request) == "WRITER":
            if turns(request) == 0:
                return tool_calls(call("write_file", {"path": "d.txt", "content": "x"}, id="w"))
            return last_tool_result(request)
        if turns(request) == 0:
            return tool_calls(call("writer", {"task": "t"}, id="d"))
        return last_tool_result(request)

    scripted_agent.model.set_handler(script)
    result, handle = await scripted_agent.run(
        {
            "prompt": "write",
            "agents": ["writer"],
            "approval_policy": {"rules": [{"tools": "write_*", "action": "deny"}]},
        }
    )
    assert result.answer.startswith("Error: denied by policy: write_* → deny")
    child = scripted_agent.client.get_workflow_handle(f"{handle.id}/writer-d")
    assert "write_file" not in await activity_types(child)
    assert not (scripted_agent.workspace / "d.txt").exists()


async def test_nesting_past_the_limit_is_an_observation(scripted_agent: ScriptedHarness) -> None:
    def script(request: ModelRequest) -> Completion | str:
        if turns(request) == 0:
            return tool_calls(call("nester", {"task": "go deeper"}, id="n"))
        return f"nested: {last_tool_result(request)}"

    scripted_agent.model.set_handler(script)
    result, handle = await scripted_agent.run(
        {"prompt": "nest", "agents": ["nester"], "max_agent_depth": 2}
    )
    assert result.stop_reason == "completed"
    grandchild = scripted_agent.client.get_workflow_handle(
        f"{handle.id}/nester-n/nester-n", result_type=AgentResult
    )
    deepest = await grandchild.result()
    assert deepest.steps[0].status == "error"
    assert "agents may nest 2 deep" in deepest.steps[0].observation
    assert "nested: nested: Error: agents may nest 2 deep" in result.answer


async def test_cancelling_the_parent_cancels_its_children(scripted_agent: ScriptedHarness) -> None:
    release = asyncio.Event()

    def script(request: ModelRequest) -> Any:
        if who(request) == "SLEEP":
            return gate(release, text("never"))
        return tool_calls(call("sleeper", {"task": "sleep"}, id="s"))

    scripted_agent.model.set_handler(script)
    handle = await scripted_agent.start({"prompt": "sleep", "agents": ["sleeper"]})
    child = scripted_agent.client.get_workflow_handle(f"{handle.id}/sleeper-s")
    await eventually(
        lambda: any(who(r) == "SLEEP" for r in scripted_agent.model.requests),
        what="the child's model call",
    )
    await handle.cancel()
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    ended = await eventually(lambda: _closed_status(child), what="the child to end as cancelled")
    assert ended == WorkflowExecutionStatus.CANCELED


async def _closed_status(handle: Any) -> WorkflowExecutionStatus | None:
    status = (await handle.describe()).status
    return None if status == WorkflowExecutionStatus.RUNNING else status


async def test_childrens_tokens_count_toward_the_parents_budget(
    scripted_agent: ScriptedHarness,
) -> None:
    def script(request: ModelRequest) -> Completion | str:
        if who(request) == "researcher":
            return text("found it", usage=(400, 100))
        return tool_calls(call("researcher", {"task": "q"}, id=f"d{turns(request)}"))

    scripted_agent.model.set_handler(script)
    result, _ = await scripted_agent.run(
        {"prompt": "research", "agents": ["researcher"], "max_total_tokens": 300}
    )
    assert result.stop_reason == "token_budget"
    assert result.usage.total_tokens == 15 + 500
    assert len(result.steps) == 1


@pytest.mark.parametrize(
    ("agents", "named"),
    [
        (["nobody"], "agents: unknown agent profile(s) nobody; available: researcher"),
        (["calculator"], "agents: unknown agent profile(s) calculator"),
    ],
)
async def test_unknown_profiles_are_refused_at_start(
    scripted_agent: ScriptedHarness, agents: list[str], named: str
) -> None:
    handle = await scripted_agent.start(
        {"prompt": "x", "agents": agents}, workflow_id=f"agent-{uuid.uuid4()}"
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == INVALID_INPUT
    assert named in cause.message


async def test_a_session_turns_sub_agent_is_answered_at_the_session(
    scripted_agent: ScriptedHarness,
) -> None:
    """A turn that runs inside its session delegates like a run: the child's id starts with the
    turn's scope, its pending write shows at the session and the session's `decide` answers it."""

    def script(request: ModelRequest) -> Completion | str:
        if who(request) == "WRITER":
            if turns(request) == 0:
                return tool_calls(call("write_file", {"path": "s.txt", "content": "hi"}, id="w1"))
            return f"writer: {last_tool_result(request)}"
        if turns(request) == 0:
            return tool_calls(call("writer", {"task": "write hi to s.txt"}, id="d1"))
        return "done"

    scripted_agent.model.set_handler(script)
    session_id = f"session-{uuid.uuid4()}"
    session = await scripted_agent.client.start_workflow(
        "SessionWorkflow",
        {"agent": {"agents": ["writer"]}},
        id=session_id,
        task_queue=scripted_agent.task_queue,
    )
    await session.signal("send", {"text": "write"})
    pending = await eventually(
        lambda: session.query("pending_approvals", result_type=list[PendingRequest]),
        what="the child's write waiting at the session",
    )
    [request] = pending
    assert (request.call_id, request.tool) == ("writer-d1/w1", "write_file")
    assert f"--workflow-id {session_id} " in request.command
    with pytest.raises(WorkflowUpdateFailedError) as refused:  # the turn's validator
        await session.execute_update("decide", {"call_id": "nope", "decision": "approve"})
    assert isinstance(refused.value.cause, ApplicationError)
    assert "nope" in refused.value.cause.message
    decision = await session.execute_update(
        "decide",
        {"call_id": "writer-d1/w1", "decision": "approve", "by": "alice"},
        result_type=HumanDecision,
    )
    assert decision.outcome == "approved"
    child = scripted_agent.client.get_workflow_handle(
        f"{session_id}/turn-1/writer-d1", result_type=AgentResult
    )
    assert (await child.result()).answer == "writer: wrote 2 bytes to s.txt"
    assert (await child.describe()).parent_id == session_id
    await eventually(lambda: _idle(session), what="the turn's end")
    assert (scripted_agent.workspace / "s.txt").read_text() == "hi"


async def _idle(session: Any) -> bool:
    status = await session.query("status")
    return bool(status["state"] == "idle" and status["turns"] == 1)


async def test_a_childs_calls_all_show_at_the_parent_whatever_order_its_reports_arrive(
    scripted_agent: ScriptedHarness,
) -> None:
    """A child reports its pending calls by concurrent signals, which may arrive out of order;
    the parent keeps the newest report (they are numbered), so every call waiting shows."""

    def script(request: ModelRequest) -> Completion | str:
        if who(request) == "WRITER":
            if turns(request) == 0:
                return tool_calls(
                    *(call("write_file", {"path": f"{n}.txt", "content": n}, id=n) for n in "abc")
                )
            return "written"
        return tool_calls(call("writer", {"task": "t"}, id="d")) if turns(request) == 0 else "ok"

    scripted_agent.model.set_handler(script)
    handle = await scripted_agent.start({"prompt": "write", "agents": ["writer"]})

    async def all_three() -> list[str]:
        shown = await handle.query("pending_approvals", result_type=list[PendingRequest])
        ids = sorted(r.call_id for r in shown)
        assert ids == ["writer-d/a", "writer-d/b", "writer-d/c"], ids
        return ids

    await eventually(all_three, what="the child's three calls at the parent")
    await handle.signal("approve", {"call_id": "*", "by": "bob"})
    assert (await handle.result()).answer == "ok"
    assert sorted(p.name for p in scripted_agent.workspace.iterdir()) == ["a.txt", "b.txt", "c.txt"]
