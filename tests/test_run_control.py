"""`servers.run_control.RunControl`, what the MCP and A2A gateways (and `agent serve`) do with
Temporal, on the real dev server and worker with the real `openai` client and the fake model:
following a run through its event stream (progress of a running tool told while it runs,
nothing recorded in the run's history), and refusing sessions another server started."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.api.enums.v1 import EventType

from durable_agents.contracts.session import SessionStatus
from durable_agents.errors import NotStartedHere
from durable_agents.servers.run_control import Paused, RunControl, run_input
from durable_agents.testing import fake_openai as fake
from durable_agents.tools.agents import AgentProfiles
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.test_event_stream import PROGRESS_GATE, streamed  # noqa: F401 (the fixture)


async def test_follow_run_tells_a_running_tool_from_the_stream_and_records_nothing(
    streamed: AgentHarness,  # noqa: F811
) -> None:
    """The tool's start and its progress are told while it runs (the `status` cannot show
    them: its steps come when the round ends), then its step, then the approval it waits for;
    the follower read by query only: no update in the run's history."""
    streamed.fake.enqueue(
        fake.tool_calls(fake.call("reports_progress", {"steps": 2}, id="rc1")),
        fake.tool_calls(fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1")),
        fake.text("done"),
    )
    control = RunControl(streamed.client, streamed.task_queue, "test", AgentProfiles())
    tools = {"tools": ["reports_progress", "write_file"]}
    payload = run_input("work", None, tools, control.profiles)
    handle = await control.start(payload)
    notes: list[str] = []

    async def on_note(line: str) -> None:
        notes.append(line)

    following = asyncio.create_task(control.follow_run(handle, on_note))

    async def told_progress() -> bool:
        assert any(n.startswith("… reports_progress: step 2 of 2 (100%)") for n in notes), notes
        return True

    await eventually(told_progress, what="the running tool's progress told")
    assert '→ reports_progress {"steps": 2} started (call rc1)' in notes
    assert not any("did 2 steps" in n for n in notes)  # it is still running
    PROGRESS_GATE.setdefault("rc1", asyncio.Event()).set()
    paused = await following
    assert isinstance(paused, Paused)
    assert [p.call_id for p in paused.pending] == ["w1"]
    step = next(i for i, n in enumerate(notes) if "reports_progress" in n and "→ did 2" in n)
    assert notes.index('→ reports_progress {"steps": 2} started (call rc1)') < step
    assert any("write_file" in n and "waits for approval (call w1)" in n for n in notes[step:])
    history = await handle.workflow.fetch_history()
    kinds = {e.event_type for e in history.events}
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED not in kinds
    await handle.workflow.terminate("test over")


async def test_send_refuses_a_session_another_server_started(
    streamed: AgentHarness,  # noqa: F811
) -> None:
    """A session started elsewhere (no `started_via` of ours) exists: `send` refuses it and
    sends nothing; a session id that does not exist yet starts, marked as ours."""
    outsider = await streamed.client.start_workflow(
        "SessionWorkflow", {}, id=f"outsider-{uuid.uuid4()}", task_queue=streamed.task_queue
    )
    control = RunControl(streamed.client, streamed.task_queue, "mcp", AgentProfiles())
    with pytest.raises(NotStartedHere, match="was not started through the MCP gateway"):
        await control.send(outsider.id, "hello")
    status = await outsider.query("status", result_type=SessionStatus)
    assert (status.turns, status.queued) == (0, 0)

    streamed.fake.enqueue(fake.text("hi there"))
    ours = f"ours-{uuid.uuid4()}"
    update = await control.send(ours, "hello")
    assert (await update.result()).answer == "hi there"
    memo = await (await streamed.client.get_workflow_handle(ours).describe()).memo()
    assert memo["started_via"] == "mcp"
    streamed.fake.enqueue(fake.text("again"))
    again = await control.send(ours, "and again?")  # ours: taken
    assert (await again.result()).answer == "again"
    for handle in (outsider, streamed.client.get_workflow_handle(ours)):
        await handle.terminate("test over")
