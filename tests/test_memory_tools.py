"""Long-term memory end to end, on SQLite and on PostgreSQL (each test runs once per store): the
real worker on the real Temporal server runs `remember` / `recall` / `forget` as activities.

Memories written in one session are recalled in another session of the same scope and never in
another scope's; a run without a scope is not offered the tools; a write whose reply was lost is
retried by Temporal and stores once; `worker.py` opens and migrates the store at start."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.context_cache import ContextCache
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.contracts.session import SessionResult
from durable_agents.runtime.workers import build_workers
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from durable_agents.tools.memory_store import MemoryStore
from testkit.crash_tools import ROOT, WorkerCluster, attempts_of, free_port, worker_env
from tests.catalog import TEST_CATALOG
from tests.conftest import FAKE_MODEL
from tests.memory_support import (  # noqa: F401  (the *_fixture names register fixtures)
    FlakyStore,
    MemoryTarget,
    memory_target_fixture,
    postgres_server_url_fixture,
    store_fixture,
)
from tests.scripted_model import ReplyLike, ScriptedChatModel, call, text, tool_calls
from tests.session_support import send_with_start

MEMORY_TOOLS = {"remember", "recall", "forget"}
COMMAND = re.compile(r"^(remember|recall|forget):\s*(.*)$", re.I | re.S)
ARGUMENT = {"remember": "text", "recall": "query", "forget": "memory_id"}


def memory_model(request: ModelRequest) -> ReplyLike:
    """A model that does what the user's message says: `remember: <text>`, `recall: <query>`,
    `forget: <id>` become that tool call; a tool result is answered with `tool said: <it>`."""
    last = request.messages[-1]
    if last.role == "tool":
        return text(f"tool said: {last.content}")
    command = COMMAND.match(last.content or "")
    if command is None:
        return text("nothing to do")
    name = command.group(1).lower()
    return tool_calls(call(name, {ARGUMENT[name]: command.group(2).strip()}))


@dataclass
class MemoryHarness:
    """The real worker, with a scripted model and a memory store, on its own task queue."""

    client: Client
    task_queue: str
    model: ScriptedChatModel
    store: FlakyStore

    async def run(self, payload: dict[str, Any]) -> tuple[AgentResult, WorkflowHandle[Any, Any]]:
        handle = await self.client.start_workflow(
            "AgentWorkflow",
            payload,
            id=f"memory-{uuid.uuid4()}",
            task_queue=self.task_queue,
            result_type=AgentResult,
        )
        return await handle.result(), handle

    def offered(self, request_index: int = -1) -> set[str]:
        return {t.name for t in self.model.requests[request_index].tools}


@pytest.fixture
async def memory_agent(
    temporal_env: WorkflowEnvironment, store: MemoryStore, tmp_path: Path
) -> AsyncIterator[MemoryHarness]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    model.set_handler(memory_model)
    flaky = FlakyStore(store)
    queue = f"memory-test-{uuid.uuid4()}"
    async with AsyncExitStack() as stack:
        for worker in build_workers(
            temporal_env.client,
            task_queue=queue,
            model=model,
            catalog=TEST_CATALOG,
            workspace=workspace,
            context_cache=ContextCache(),
            memory=flaky,
        ):
            await stack.enter_async_context(worker)
        yield MemoryHarness(temporal_env.client, queue, model, flaky)
    assert model.errors == []


async def end_session(handle: WorkflowHandle[Any, Any]) -> None:
    await handle.signal("end", {"reason": "test over"})
    ended = await handle.result()
    assert SessionResult.model_validate(ended).reason == "test over"


# -- across sessions -------------------------------------------------------------------------------


async def test_memories_written_in_one_session_are_recalled_in_another(
    memory_agent: MemoryHarness,
) -> None:
    h = memory_agent

    async def session(scope: str, message: str) -> Any:
        result, handle = await send_with_start(
            h.client,
            f"memory-session-{uuid.uuid4()}",
            h.task_queue,
            message,
            {"agent": {"memory_scope": scope}},
        )
        await end_session(handle)
        return result

    first = await session("user-alice", "remember: My favourite colour is blue.")
    assert [s.tool for s in first.steps] == ["remember"]
    assert first.steps[0].status == "ok"
    memory_id = first.steps[0].observation.removeprefix("remembered as ")
    assert memory_id.startswith("mem_")

    second = await session("user-alice", "recall: what is my favourite colour?")
    assert [s.tool for s in second.steps] == ["recall"]
    found = json.loads(second.steps[0].observation)
    assert [(m["id"], m["text"]) for m in found] == [(memory_id, "My favourite colour is blue.")]
    assert "My favourite colour is blue." in (second.answer or "")

    other = await session("user-bob", "recall: what is my favourite colour?")
    assert [(s.tool, s.observation) for s in other.steps] == [("recall", "no memories match")]
    assert await h.store.count("user-alice") == 1
    assert await h.store.count("user-bob") == 0


async def test_forget_through_the_worker(memory_agent: MemoryHarness) -> None:
    h = memory_agent
    alice = await h.store.remember("alice", "Alice's locker code is 4321.", [], "seeded-1")
    scoped = {"memory_scope": "alice"}

    refused, _ = await h.run({"prompt": f"forget: {alice.id}", "memory_scope": "bob"})
    assert refused.steps[0].observation == f"Error: no memory {alice.id} in this scope"
    assert refused.stop_reason == "completed"  # an observation, not a failed run
    assert await h.store.count("alice") == 1

    done, _ = await h.run({"prompt": f"forget: {alice.id}", **scoped})
    assert done.steps[0].observation == f"forgot {alice.id}"
    gone, _ = await h.run({"prompt": "recall: locker code", **scoped})
    assert gone.steps[0].observation == "no memories match"


# -- which runs get the tools ----------------------------------------------------------------------


async def test_a_run_without_memory_scope_is_not_offered_the_memory_tools(
    memory_agent: MemoryHarness,
) -> None:
    h = memory_agent
    await h.run({"prompt": "hello"})
    assert h.offered() & MEMORY_TOOLS == set()
    assert "calculator" in h.offered()

    await h.run({"prompt": "hello", "memory_scope": "alice"})
    assert h.offered() >= MEMORY_TOOLS

    # A model that calls one anyway gets an observation; nothing is stored or run.
    h.model.enqueue(tool_calls(call("remember", {"text": "sneaky"})), text("ok"))
    result, handle = await h.run({"prompt": "hi"})
    assert result.steps[0].observation.startswith(
        "Error: remember is only available to runs with a memory_scope"
    )
    assert h.store.calls["remember"] == 0
    assert await attempts_of(handle, "remember") == []


# -- idempotent writes -----------------------------------------------------------------------------


async def test_a_retried_remember_stores_once(memory_agent: MemoryHarness) -> None:
    h = memory_agent
    h.store.lose_replies["remember"] = 1  # the first attempt stores, then its reply is lost
    result, handle = await h.run({"prompt": "remember: Likes green tea.", "memory_scope": "carol"})
    assert await attempts_of(handle, "remember") == [2]  # Temporal retried it
    assert h.store.calls["remember"] == 2
    assert await h.store.count("carol") == 1
    [memory] = await h.store.recall("carol", "tea", 5)
    assert result.steps[0].observation == f"remembered as {memory.id}"


async def test_a_retried_forget_reports_its_deletion(memory_agent: MemoryHarness) -> None:
    h = memory_agent
    memory = await h.store.remember("carol", "Likes green tea.", [], "seeded-1")
    h.store.lose_replies["forget"] = 1  # the first attempt deletes, then its reply is lost
    result, handle = await h.run({"prompt": f"forget: {memory.id}", "memory_scope": "carol"})
    assert await attempts_of(handle, "forget") == [2]
    assert result.steps[0].observation == f"forgot {memory.id}"
    assert await h.store.count("carol") == 0


# -- worker.py -------------------------------------------------------------------------------------


async def test_worker_process_opens_and_migrates_the_store(
    temporal_env: WorkflowEnvironment,
    fake_model: FakeOpenAIServer,
    memory_target: MemoryTarget,
    tmp_path: Path,
) -> None:
    cluster = WorkerCluster(
        temporal_env.client, fake_model.base_url, tmp_path, extra_env=memory_target.env()
    )
    try:
        worker = await cluster.start_worker()
        assert "long-term memory (remember, recall, forget):" in worker.output()
        fake_model.enqueue(
            fake.tool_calls(
                fake.call("remember", {"text": "Prefers window seats.", "tags": ["travel"]})
            ),
            fake.text("Noted."),
        )
        handle = await cluster.start_run({"prompt": "I prefer window seats", "memory_scope": "dan"})
        result = await cluster.result_of(handle)
        assert result.steps[0].observation.startswith("remembered as mem_"), cluster.logs()
        assert await worker.stop() == 0, cluster.logs()  # closes the store after draining
    finally:
        await cluster.close()
    opened = await memory_target.open()  # the worker's schema: migrating again is a no-op
    try:
        [memory] = await opened.recall("dan", "window", 5)
        assert (memory.text, memory.tags) == ("Prefers window seats.", ["travel"])
    finally:
        await opened.close()


async def test_worker_process_stops_when_the_memory_database_is_unreachable(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    env = worker_env(
        address=temporal_env.client.service_client.config.target_host,
        task_queue=f"memory-{uuid.uuid4()}",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-unused",
        workspace=tmp_path / "workspace",
        records=tmp_path / "records",
        extra={"MEMORY_DATABASE_URL": f"postgresql://agent:pw-77@127.0.0.1:{free_port()}/mem"},
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "worker.py",
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    log = output.decode()
    assert process.returncode == 1, log
    assert "worker stopped: cannot reach the memory database" in log
    assert "pw-77" not in log
