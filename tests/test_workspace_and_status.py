"""The file tool through the real workflow, and the `status` query through a run (with the
scripted in-memory model: no HTTP hop)."""

from __future__ import annotations

import asyncio

from durable_agents.contracts.agent_status import AgentStatus
from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.conftest import ScriptedHarness


async def test_read_file_reads_inside_the_workspace_only(scripted_agent: ScriptedHarness) -> None:
    (scripted_agent.workspace / "notes.txt").write_text("the code is 7431")
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("read_file", {"path": "notes.txt"}),
            sm.call("read_file", {"path": "../../etc/passwd"}),
            sm.call("read_file", {"path": "/etc/passwd"}),
        ),
        sm.text("The code is 7431."),
    )
    result, _ = await scripted_agent.run({"prompt": "what is the code?", "tools": ["read_file"]})
    ok, dotdot, absolute = result.steps
    assert (ok.status, ok.observation) == ("ok", "the code is 7431")
    assert dotdot.status == absolute.status == "error"
    assert "root:" not in dotdot.observation + absolute.observation


async def test_status_query_follows_the_run(scripted_agent: ScriptedHarness) -> None:
    second_answer = asyncio.Event()
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("echo", {"text": "a"})), sm.gate(second_answer, sm.text("done"))
    )
    handle = await scripted_agent.start({"prompt": "x", "tools": ["echo"], "max_iterations": 4})

    async def second_turn() -> AgentStatus:  # the second model call is in flight (held)
        status = await handle.query("status", result_type=AgentStatus)
        assert status.iteration == 2, status
        return status

    status = await eventually(second_turn, what="the second model call")
    assert (status.phase, status.iteration, status.max_iterations) == ("thinking", 2, 4)
    assert status.steps == 1
    assert status.recent_steps[0].observation == "a"
    assert status.usage.total_tokens == 15
    second_answer.set()
    result = await handle.result()
    assert (result.answer, result.iterations) == ("done", 2)
