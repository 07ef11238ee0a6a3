"""`agent chat SESSION`: a conversation from the terminal, with an inline approval, as a real
subprocess against the real server and worker."""

from __future__ import annotations

import re
import uuid
from typing import Any

from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.session import MemoryTurn, SessionResult
from durable_agents.testing import fake_openai as fake
from tests.conftest import AgentHarness
from tests.test_cli_run import AgentCli


async def test_chat_converses_and_approves_inline(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    def model(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]
        if last["role"] == "user" and last["content"] == "save a note":
            return fake.tool_calls(fake.call("write_file", {"path": "n.txt", "content": "note"}))
        if last["role"] == "tool":
            return fake.text("Saved.")
        return fake.text(f"you said {last['content']}")

    agent.fake.set_handler(model)
    session = f"chat-{uuid.uuid4().hex[:8]}"
    cli = AgentCli.of(agent, temporal_env)
    done = await cli("chat", session, "--by", "tester", stdin="hello\nsave a note\ny\n/end\n")

    assert done.code == 0, done.err
    assert "agent> you said hello" in done.out
    assert "write_file" in done.out
    # The second message is the session's turn 2, whatever model call within it is shown.
    headers = re.findall(r"\bturn \d.*", done.out)
    assert headers and all(h.startswith("turn 2 · model call 1/10") for h in headers), headers
    assert "agent> Saved." in done.out
    assert f"session {session} ended" in done.out
    assert (agent.workspace / "n.txt").read_text() == "note"
    handle = agent.client.get_workflow_handle(session, result_type=SessionResult)
    result = await handle.result()
    assert result.turns == 2
    history = await handle.query("history", result_type=list[MemoryTurn])
    assert [t.user for t in history] == ["hello", "save a note"]
