"""The file tool through the real workflow, and the `status` query through a run."""

from __future__ import annotations

import asyncio
from typing import Any

from contracts.agent_status import AgentStatus
from tests import fake_openai as fake
from tests.conftest import AgentHarness


async def test_read_file_reads_inside_the_workspace_only(agent: AgentHarness) -> None:
    (agent.workspace / "notes.txt").write_text("the code is 7431")
    agent.fake.enqueue(
        fake.tool_calls(
            fake.call("read_file", {"path": "notes.txt"}),
            fake.call("read_file", {"path": "../../etc/passwd"}),
            fake.call("read_file", {"path": "/etc/passwd"}),
        ),
        fake.text("The code is 7431."),
    )
    result, _ = await agent.run({"prompt": "what is the code?", "tools": ["read_file"]})
    ok, dotdot, absolute = result.steps
    assert (ok.status, ok.observation) == ("ok", "the code is 7431")
    assert dotdot.status == absolute.status == "error"
    assert "root:" not in dotdot.observation + absolute.observation


async def test_status_query_follows_the_run(agent: AgentHarness) -> None:
    gate = asyncio.Event()
    replies: list[Any] = [fake.tool_calls(fake.call("echo", {"text": "a"})), fake.text("done")]

    def handler(body: dict[str, Any]) -> Any:
        reply = replies.pop(0)
        return fake.delay(60, reply) if not gate.is_set() and not replies else reply

    agent.fake.set_handler(handler)
    handle = await agent.start({"prompt": "x", "tools": ["echo"], "max_iterations": 4})
    for _ in range(100):  # wait until the second model call is in flight
        status = await handle.query("status", result_type=AgentStatus)
        if status.iteration == 2:
            break
        await asyncio.sleep(0.05)
    assert (status.phase, status.iteration, status.max_iterations) == ("thinking", 2, 4)
    assert status.steps == 1
    assert status.recent_steps[0].observation == "a"
    assert status.usage.total_tokens == 15
    await handle.terminate("test over")
