"""Issue 33: the live view's answerer (`agent run`, `watch`, `chat`) answers through
`RunHandle`, so its checks apply: a reply to a question someone else answered meanwhile is
refused in words, where the raw `reply` signal was silently ignored by the run while the
view printed `→ replied to`."""

from __future__ import annotations

import io
import os
import uuid

from temporalio.testing import WorkflowEnvironment

from durable_agents.cli.lines import LineReader
from durable_agents.cli.progress import Answerer, Console
from durable_agents.client import RunHandle
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.hitl_support import wait_for_pending


def piped(text: str) -> LineReader:
    """A reader of `text` from a pipe (not a terminal: each prompt prints with its answer)."""
    read_end, write_end = os.pipe()
    os.write(write_end, text.encode())
    os.close(write_end)
    return LineReader(read_end)


async def test_a_reply_to_a_question_answered_elsewhere_is_refused(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("ask_user", {"question": "Which colour?"}, id="q1")),
        fake.tool_calls(fake.call("write_file", {"path": "c.txt", "content": "blue"}, id="w1")),
        fake.text("Written."),
    )
    handle = await agent.start(
        {"prompt": "ask, then write", "tools": ["ask_user", "write_file"]},
        workflow_id=f"cli-answerer-{uuid.uuid4()}",
    )
    [question] = await wait_for_pending(handle, 1)
    run = RunHandle(temporal_env.client, handle.id)
    await run.reply("q1", "blue", by="another shell")

    async def approval_waits() -> bool:
        return [p.call_id for p in await run.pending()] == ["w1"]

    await eventually(approval_waits, timeout=30, what="w1's approval after the reply")

    screen = io.StringIO()
    answerer = Answerer(
        RunHandle(temporal_env.client, handle.id),
        Console(screen),
        piped("red\n"),
        by="alice",
        prefix="agent",
    )
    await answerer.ask(question)

    shown = screen.getvalue()
    assert "→ replied to q1" not in shown, shown
    assert "cannot reply to 'q1'" in shown and "no pending question 'q1'" in shown, shown
    assert [p.call_id for p in await run.pending()] == ["w1"]
    await run.approve("w1")
    assert (await run.result()).answer == "Written."
