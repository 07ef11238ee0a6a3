"""Determinism: histories of real runs replay without error against the current workflow code."""

from __future__ import annotations

import uuid

from durable_agents.runtime.workers import build_replayer
from durable_agents.testing import fake_openai as fake
from tests.catalog import TEST_CATALOG
from tests.conftest import AgentHarness


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
    replayer = build_replayer(TEST_CATALOG)
    result = await replayer.replay_workflow(history)
    assert result.replay_failure is None
