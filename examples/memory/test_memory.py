"""What one run remembers for a user, a later run for the same user recalls, and a run for
another user does not: a real SQLite memory store, `AgentTestEnvironment`, a scripted
`TestModel`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from durable_agents.testing import AgentTestEnvironment, TestModel, call, text
from durable_agents.tools.memory_store import MemoryStore, open_memory_store
from examples.memory.agent import assistant
from examples.memory.chat import tell


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[MemoryStore]:
    store = await open_memory_store(url=None, path=tmp_path / "memory.db")
    try:
        yield store
    finally:
        await store.close()


async def test_memory_outlives_the_run_and_stays_with_its_user(memory: MemoryStore) -> None:
    model = TestModel(
        [
            call("remember", text="prefers window seats"),
            text("Noted."),
            call("recall", query="seats"),
            text("You like window seats."),
            call("recall", query="seats"),
            text("I do not know yet."),
        ]
    )
    async with AgentTestEnvironment.start([assistant], memory=memory) as env:
        with assistant.override(model=model):
            queue = env.task_queue
            await tell(env.agents, "user-42", "I prefer window seats", task_queue=queue)
            same = await tell(env.agents, "user-42", "Which seat do I like?", task_queue=queue)
            other = await tell(env.agents, "user-7", "Which seat do I like?", task_queue=queue)
    assert (same, other) == ("You like window seats.", "I do not know yet.")
    recalled_by_42 = model.requests[3].messages[-1]["content"]
    recalled_by_7 = model.requests[5].messages[-1]["content"]
    assert "prefers window seats" in recalled_by_42
    assert "window" not in recalled_by_7
