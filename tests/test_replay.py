"""Determinism: histories of real runs replay without error against the current workflow code."""

from __future__ import annotations

import uuid

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from testkit import fake_openai as fake
from tests.conftest import AgentHarness
from workflows.agent_workflow import AgentWorkflow


async def test_runs_replay_deterministically(agent: AgentHarness) -> None:
    group = f"replay-{uuid.uuid4()}"
    agent.fake.enqueue(
        fake.tool_calls(
            fake.call("rendezvous", {"group": group, "size": 2, "label": "a"}),
            fake.call("rendezvous", {"group": group, "size": 2, "label": "b"}),
            fake.call("nope", {}),
        ),
        fake.tool_calls(fake.call("refuses", {"text": "x"})),
        fake.text(""),
        fake.text("done"),
    )
    _, handle = await agent.run({"prompt": "x", "tools": ["rendezvous", "refuses"]})
    history = await handle.fetch_history()
    replayer = Replayer(workflows=[AgentWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history)
    assert result.replay_failure is None
