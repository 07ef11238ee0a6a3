"""A side-effecting call repeated after an identical one ran and succeeded (issue 31, item 5).

A real model had its write approved and run, then sent the same write again; the second was
approved and ran again, since the repeated-call guard refuses only the third. Now the second
request is flagged to the person asked (the `pending_approvals` query, the `approval_requested`
event, the Web UI's current details, the CLI's display), and a policy rule with
`repeat: refuse` never runs it. Real worker and server, scripted model."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from durable_agents.client.render import approval_prompt, pending_block
from durable_agents.contracts.approvals import PendingRequest, RepeatOf
from durable_agents.contracts.events import ApprovalRequested
from durable_agents.runtime.event_stream import read_events
from testkit.eventually import eventually
from tests.conftest import ScriptedHarness, activity_types
from tests.hitl_support import wait_for_pending
from tests.scripted_model import call, text, tool_calls

WRITE = {"path": "a.txt", "content": "x"}


def write_twice(agent: ScriptedHarness) -> None:
    """The model writes a.txt, then sends the identical write again, then answers."""
    agent.model.enqueue(
        tool_calls(call("write_file", WRITE, id="w1")),
        tool_calls(call("write_file", WRITE, id="w2")),
        text("Written."),
    )


async def test_an_identical_write_after_one_that_ran_is_flagged_to_the_reviewer(
    scripted_agent: ScriptedHarness,
) -> None:
    write_twice(scripted_agent)
    handle = await scripted_agent.start({"prompt": "write a.txt", "tools": ["write_file"]})
    [first] = await wait_for_pending(handle)
    assert (first.call_id, first.repeat_of) == ("w1", None)
    await handle.signal("approve", {"call_id": "w1", "by": "ops"})

    async def second_pending() -> PendingRequest:
        [request] = await wait_for_pending(handle)
        assert request.call_id == "w2"
        return request

    second = await eventually(second_pending, what="the identical second write waiting")
    assert second.repeat_of is not None
    assert (second.repeat_of.call_id, second.repeat_of.times) == ("w1", 1)
    assert second.repeat_of.result and "a.txt" in second.repeat_of.result

    events, _ = await read_events(scripted_agent.client, handle.id)
    requested = [e for e in events if isinstance(e, ApprovalRequested)]
    assert [(e.call_id, e.repeat_of is not None) for e in requested] == [
        ("w1", False),
        ("w2", True),
    ]
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert "⚠ repeat: this exact call \\(same tool, same arguments\\) already ran" in details

    await handle.signal("reject", {"call_id": "w2", "reason": "it already ran"})
    result = await handle.result()
    assert [(s.call_id, s.status) for s in result.steps] == [("w1", "ok"), ("w2", "rejected")]
    assert (await activity_types(handle)).count("write_file") == 1


async def test_a_policy_can_refuse_the_repeat_outright(scripted_agent: ScriptedHarness) -> None:
    write_twice(scripted_agent)
    rule: dict[str, Any] = {"tools": "write_*", "action": "ask", "repeat": "refuse"}
    handle = await scripted_agent.start(
        {"prompt": "write a.txt", "tools": ["write_file"], "approval_policy": {"rules": [rule]}}
    )
    await wait_for_pending(handle)
    await handle.signal("approve", {"call_id": "w1"})
    # Nobody is asked about w2 (before the rule existed, it waited for a second approval).
    result = await asyncio.wait_for(handle.result(), timeout=30)

    first, second = result.steps
    assert (first.status, second.status) == ("ok", "denied")
    assert second.policy == "policy rule write_* → ask, repeat → refuse"
    assert second.observation.startswith(
        "Error: refused by policy: this exact write_file call (same arguments) already ran and "
        "succeeded once in this run (last as call w1)"
    )
    assert second.human is None
    assert (await activity_types(handle)).count("write_file") == 1
    told = scripted_agent.model.requests[2].messages[-1].content or ""
    assert told == second.observation


def test_the_cli_shows_the_repeat() -> None:
    at = datetime(2026, 12, 5, tzinfo=UTC)
    request = PendingRequest(
        kind="approval", call_id="w2", tool="write_file", args=WRITE, args_digest="d",
        requested_at=at, command="temporal workflow signal ...",
        repeat_of=RepeatOf(call_id="w1", times=1, result="wrote 1 byte to a.txt"),
    )  # fmt: skip
    lines = pending_block(request)
    assert lines[0].startswith('  ? write_file {"path": "a.txt", "content": "x"} waits for')
    assert lines[1].strip() == (
        "⚠ repeat: this exact call (same tool, same arguments) already ran and succeeded once "
        "in this run (last as call w1); it returned: wrote 1 byte to a.txt. Approving runs it "
        "again."
    )
    assert "AGAIN (it already ran and succeeded)?" in approval_prompt(request)
    plain = request.model_copy(update={"repeat_of": None})
    assert len(pending_block(plain)) == 1
    assert "AGAIN" not in approval_prompt(plain)
