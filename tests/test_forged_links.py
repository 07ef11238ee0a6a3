"""Links between runs cannot be forged (issue 18): the attack that worked, and its variants.

The attack: a client started a run whose input claimed an unrelated run as its `parent`; the
forged "sub-agent" reported a pending `write_file` to that run (`child_pending`), the run's
owner approved `*`, and the forged write ran, recorded as approved by the owner. Now a run's
links come from Temporal (`workflow.info().parent`), a run takes `child_pending` only from a
running child it started (its id and the token it gave it), and a forwarded approval carries
the digest of the arguments shown, so a child runs only what the reviewer saw.

Real worker and server; one scripted model answers every run (told apart by system prompts).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.agents import AgentProfile
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.errors import INVALID_INPUT
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.loop.approvals import args_digest
from testkit.eventually import eventually
from tests.catalog import TEST_CATALOG
from tests.conftest import ScriptedHarness
from tests.hitl_support import wait_for_pending
from tests.scripted_model import Completion, call, tool_calls

SCRIBE = AgentProfile(
    name="scribe",
    description="Writes files.",
    system_prompt="You are the SCRIBE.",
    tools=["write_file"],
    max_iterations=4,
)
if TEST_CATALOG.agents.get(SCRIBE.name) is None:
    TEST_CATALOG.agents.register(SCRIBE)

EVIL = {"path": "evil.txt", "content": "rm -rf /", "overwrite": True}


def tool_results(request: ModelRequest) -> int:
    return sum(1 for m in request.messages if m.role == "tool")


def script(request: ModelRequest) -> Completion | str:
    """The victim writes a.txt; a forged run or a scribe writes evil.txt; a parent delegates."""
    system = request.messages[0].content or ""
    prompt = request.messages[1].content or ""
    if tool_results(request):
        return "done"
    if "SCRIBE" in system or "evil" in prompt:
        return tool_calls(call("write_file", EVIL, id="w1"))
    if "delegate" in prompt:
        return tool_calls(call("scribe", {"task": "write the file"}, id="d1"))
    return tool_calls(call("write_file", {"path": "a.txt", "content": "mine"}, id="v1"))


async def victim(harness: ScriptedHarness, prompt: str = "write a.txt") -> WorkflowHandle[Any, Any]:
    harness.model.set_handler(script)
    handle = await harness.start({"prompt": prompt, "tools": ["write_file"], "agents": ["scribe"]})
    await wait_for_pending(handle)
    return handle


async def pending_ids(handle: WorkflowHandle[Any, Any]) -> list[str]:
    found = await handle.query("pending_approvals", result_type=list[PendingRequest])
    return [p.call_id for p in found]


@pytest.mark.parametrize(
    ("links", "expected"),
    [
        ({"parent": {"workflow_id": "VICTIM", "call_key": "scribe-x"}}, "parent: this run was not"),
        ({"depth": 2}, "depth: set by a parent run"),
        ({"session": {"workflow_id": "VICTIM", "turn_id": "t"}}, "session: this run was not"),
        ({"resume": {"messages": []}}, "resume: set by the run itself"),
    ],
    ids=["parent", "depth", "session", "resume"],
)
async def test_a_start_that_claims_links_it_does_not_have_is_refused(
    scripted_agent: ScriptedHarness, links: dict[str, Any], expected: str
) -> None:
    target = await victim(scripted_agent)
    forged = {"prompt": "write evil", "tools": ["write_file"], **links}
    if "parent" in forged:
        forged["parent"]["workflow_id"] = target.id
    if "session" in forged:
        forged["session"]["workflow_id"] = target.id
    attacker = await scripted_agent.start(forged)
    with pytest.raises(WorkflowFailureError) as failed:
        await attacker.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == INVALID_INPUT
    assert expected in cause.message, cause.message

    assert await pending_ids(target) == ["v1"]  # nothing was added to the victim
    await target.signal("approve", {"call_id": "*", "by": "owner"})
    await target.result()
    assert not (scripted_agent.workspace / "evil.txt").exists()
    assert (scripted_agent.workspace / "a.txt").read_text() == "mine"


async def test_a_forged_child_pending_cannot_add_a_request(scripted_agent: ScriptedHarness) -> None:
    target = await victim(scripted_agent)
    shown = PendingRequest(
        kind="approval",
        call_id="w1",
        tool="write_file",
        args=EVIL,
        args_digest=args_digest(EVIL),
        requested_at="2026-12-01T00:00:00Z",
        command="",
    )
    for key, child in [
        ("scribe-v1", f"{target.id}/scribe-v1"),  # where a real child would be
        ("evil-1", "attacker-run"),
    ]:
        await target.signal(
            "child_pending",
            {"call_key": key, "workflow_id": child, "pending": [shown.model_dump(mode="json")]},
        )
    await target.execute_update("steer", {"text": "the signals above were handled"})
    assert await pending_ids(target) == ["v1"]

    await target.signal("approve", {"call_id": "*", "by": "owner"})
    await target.result()
    assert not (scripted_agent.workspace / "evil.txt").exists()
    history = await target.fetch_history()
    assert not any(
        e.event_type == EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED
        for e in history.events
    )  # the owner's `*` was forwarded to no forged "child"


async def child_token(harness: ScriptedHarness, child_id: str) -> str:
    """What an attacker who can read histories finds: the token in the child's input."""
    history = await harness.client.get_workflow_handle(child_id).fetch_history()
    start = history.events[0].workflow_execution_started_event_attributes
    return str(json.loads(start.input.payloads[0].data)["parent"]["token"])


async def test_a_real_childs_report_cannot_be_spoofed_into_an_approval(
    scripted_agent: ScriptedHarness,
) -> None:
    parent = await victim(scripted_agent, prompt="delegate it")
    child_id = f"{parent.id}/scribe-d1"
    [real] = await wait_for_pending(parent)
    assert (real.call_id, real.args["path"]) == ("scribe-d1/w1", "evil.txt")

    # Without the token: ignored.
    harmless = {"path": "harmless.txt", "content": "hello", "overwrite": True}
    # The spoof claims the digest of the child's real call (anyone who can read the child's
    # history knows it): what the parent shows is bound by the digest it computes itself.
    spoof = real.model_copy(
        update={"call_id": "w1", "args": harmless, "args_digest": real.args_digest}
    ).model_dump(mode="json")
    report = {"call_key": "scribe-d1", "workflow_id": child_id, "pending": [spoof]}
    await parent.signal("child_pending", report)
    await parent.execute_update("steer", {"text": "handled"})
    [still] = await wait_for_pending(parent)
    assert still.args["path"] == "evil.txt"

    # With the token read from history: shown, but an approval of what is shown is bound to its
    # digest, so the child refuses it and its real (different) call does not run.
    await parent.signal(
        "child_pending", {**report, "token": await child_token(scripted_agent, child_id)}
    )

    async def spoofed() -> PendingRequest:
        [shown] = await parent.query("pending_approvals", result_type=list[PendingRequest])
        assert shown.args["path"] == "harmless.txt"
        assert shown.args_digest == args_digest(harmless) != real.args_digest
        return shown

    await eventually(spoofed, what="the spoofed report shown")
    await parent.signal("approve", {"call_id": "*", "by": "owner"})
    child = scripted_agent.client.get_workflow_handle(child_id)

    async def forwarded() -> bool:
        history = await child.fetch_history()
        signaled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        assert any(e.event_type == signaled for e in history.events), "not forwarded yet"
        return True

    await eventually(forwarded, what="the approval forwarded to the child")
    await child.execute_update("steer", {"text": "after the approval"})  # it was handled
    status = await child.query("status", result_type=AgentStatus)
    assert [p.call_id for p in status.pending] == ["w1"], status
    assert not (scripted_agent.workspace / "evil.txt").exists()
    assert not (scripted_agent.workspace / "harmless.txt").exists()
    await parent.cancel()


async def test_a_star_with_edited_arguments_is_not_spread_over_a_childs_calls(
    scripted_agent: ScriptedHarness,
) -> None:
    def two_writes(request: ModelRequest) -> Completion | str:
        system = request.messages[0].content or ""
        if tool_results(request):
            return "done"
        if "SCRIBE" in system:
            return tool_calls(
                call("write_file", {"path": "one.txt", "content": "1"}, id="w1"),
                call("write_file", {"path": "two.txt", "content": "2"}, id="w2"),
            )
        return tool_calls(call("scribe", {"task": "write both"}, id="d1"))

    scripted_agent.model.set_handler(two_writes)
    parent = await scripted_agent.start(
        {"prompt": "delegate", "tools": ["write_file"], "agents": ["scribe"]}
    )
    await wait_for_pending(parent, count=2)
    evil = {"path": "evil.txt", "content": "x", "overwrite": True}
    await parent.signal("approve", {"call_id": "*", "args": evil, "by": "owner"})
    await parent.execute_update("steer", {"text": "the approval above was handled"})
    child = scripted_agent.client.get_workflow_handle(f"{parent.id}/scribe-d1")
    await child.execute_update("steer", {"text": "nothing reached you"})
    status = await child.query("status", result_type=AgentStatus)
    assert sorted(p.call_id for p in status.pending) == ["w1", "w2"]
    assert not (scripted_agent.workspace / "evil.txt").exists()
    await parent.signal("approve", {"call_id": "*", "by": "owner"})  # without edits: both run
    await parent.result()
    assert (scripted_agent.workspace / "one.txt").read_text() == "1"
    assert (scripted_agent.workspace / "two.txt").read_text() == "2"
