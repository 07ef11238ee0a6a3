"""Fixtures for the journeys against a real model (`make test-real`, tests marked `real_model`).

- `real_model_server`: `llama-server` with Qwen2.5-Coder-1.5B and the project's chat template
  (`scripts.real_model.RealModelServer`), started once for the session and stopped at its end.
  `REAL_MODEL_BASE_URL=http://127.0.0.1:PORT/v1` uses one already running instead (a
  `make real-model` in another shell), which saves its 5 s start while writing tests.
- `real_worker`: `python worker.py` as `make run` starts it, pointed at that server by the
  variables `make real-model` prints, on its own task queue of the session's Temporal dev server;
  `real.cli` runs `agent` commands against it, `real.client` reads histories.

Every journey goes through a documented interface (the `agent` command, the HTTP API of
`agent serve`), then checks the run's history with `assert_clean_history`.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from durable_agents.testing.fake_openai import FakeOpenAIServer
from scripts.real_model import RealModelServer, worker_process_environment
from testkit.crash_tools import WorkerProcess
from tests.hang_guard import with_deadline
from tests.test_cli_run import AgentCli

BASE_URL_ENV = "REAL_MODEL_BASE_URL"
REAL_MODEL_DEADLINE_SECONDS = 1800.0
"""A journey against the real model takes minutes on a busy 2-core CPU (a model call can take
two): the everyday hang guard (tests/hang_guard.py, 300 s) would cancel it mid-run."""


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real-model journeys get `REAL_MODEL_DEADLINE_SECONDS` instead of the hang guard's."""
    for item in items:
        guarded: Any = getattr(item, "obj", None)
        if item.get_closest_marker("real_model") and hasattr(guarded, "hang_guard_seconds"):
            item.obj = with_deadline(  # type: ignore[attr-defined]
                guarded.__wrapped__, item.nodeid, REAL_MODEL_DEADLINE_SECONDS
            )


@dataclass
class RealModel:
    """Where the real model answers."""

    base_url: str


@pytest.fixture(scope="session")
def real_model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealModel]:
    """The real model's server for the session (see the module docstring)."""
    if given := os.environ.get(BASE_URL_ENV):
        yield RealModel(given)
        return
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with RealModelServer(log_path=log) as server:
        yield RealModel(server.base_url)


@dataclass
class RealWorker:
    """`worker.py` against the real model, and the `agent` command pointed at it."""

    cli: AgentCli
    client: Client
    address: str
    task_queue: str
    workspace: Path
    process: WorkerProcess


@contextlib.asynccontextmanager
async def worker_against(
    base_url: str, temporal_env: WorkflowEnvironment, root: Path
) -> AsyncIterator[RealWorker]:
    """`worker.py` pointed at the model server at `base_url` by the variables `make real-model`
    prints, on its own task queue of the session's Temporal dev server."""
    workspace = root / "workspace"
    workspace.mkdir()
    address = temporal_env.client.service_client.config.target_host
    task_queue = f"agents-real-{uuid.uuid4()}"
    env = worker_process_environment(base_url, address, task_queue, root)
    process = await WorkerProcess.start(env, root / "worker.log", ready_timeout=90)
    try:
        yield RealWorker(
            AgentCli(address, task_queue),
            temporal_env.client,
            address,
            task_queue,
            workspace,
            process,
        )
    finally:
        await process.stop()


@pytest.fixture(scope="session")
async def real_worker(
    temporal_env: WorkflowEnvironment,
    real_model_server: RealModel,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[RealWorker]:
    root = tmp_path_factory.mktemp("real-worker")
    async with worker_against(real_model_server.base_url, temporal_env, root) as worker:
        yield worker


@pytest.fixture(scope="module")
def scripted_model() -> Iterator[FakeOpenAIServer]:
    """The scripted fake model server, for the journeys' twins (`test_journeys_scripted.py`)."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
async def scripted_worker(
    temporal_env: WorkflowEnvironment,
    scripted_model: FakeOpenAIServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[RealWorker]:
    """`worker.py` as in `real_worker`, pointed at the scripted fake instead of the model."""
    root = tmp_path_factory.mktemp("scripted-worker")
    async with worker_against(scripted_model.base_url, temporal_env, root) as worker:
        yield worker
