"""Fixtures for the long-term memory tests: the same store, SQLite or PostgreSQL, behind one
parametrized fixture, so every test that asks for `memory_target` or `store` runs on both.
A test module imports the `*_fixture` functions (pytest registers them under their `name`).

PostgreSQL is real: the `pgserver` package starts a PostgreSQL 16 server from Python (no system
install), once per test session; each test gets a database of its own.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from durable_agents.tools.memory_store import (
    Memory,
    MemoryStore,
    MemoryStoreUnavailable,
    open_memory_store,
)

STORE_KINDS = ["sqlite", "postgres"]


@dataclass(frozen=True)
class MemoryTarget:
    """Where a test's memories live: a SQLite file (`path`) or a PostgreSQL database (`url`)."""

    kind: str
    path: Path
    url: str | None = None

    async def open(self) -> MemoryStore:
        """A new store on this target, connected and migrated (as the worker opens it)."""
        return await open_memory_store(url=self.url, path=self.path)

    def env(self) -> dict[str, str]:
        """The worker settings that select this target."""
        if self.url:
            return {"MEMORY_DATABASE_URL": self.url}
        return {"MEMORY_DATABASE_PATH": str(self.path)}


@pytest.fixture(scope="session", name="postgres_server_url")
def postgres_server_url_fixture() -> Iterator[str]:
    """A real PostgreSQL server for the whole test session (`pgserver`; about a second).

    Its data folder is a fresh one directly under the system temp folder, not under pytest's
    `tmp_path`: run as root, pgserver runs PostgreSQL as its own user, which cannot enter
    pytest's private (0700) folders."""
    folder = Path(tempfile.mkdtemp(prefix="memory-pgdata-"))
    with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set"
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(folder, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


async def fresh_database(server_url: str) -> str:
    """Create an empty database on the server; its URL."""
    name = f"memory_{uuid.uuid4().hex[:12]}"
    async with await psycopg.AsyncConnection.connect(server_url, autocommit=True) as admin:
        await admin.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))


@pytest.fixture(params=STORE_KINDS, name="memory_target")
async def memory_target_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryTarget:
    """An empty memory database of each kind (the test runs once per kind)."""
    path = tmp_path / "data" / "memory.db"
    if request.param == "sqlite":
        return MemoryTarget("sqlite", path)
    server_url = request.getfixturevalue("postgres_server_url")
    return MemoryTarget("postgres", path, url=await fresh_database(server_url))


@pytest.fixture(name="store")
async def store_fixture(memory_target: MemoryTarget) -> AsyncIterator[MemoryStore]:
    """A store on `memory_target`, opened and migrated as the worker does; closed after."""
    opened = await memory_target.open()
    try:
        yield opened
    finally:
        await opened.close()


class FlakyStore(MemoryStore):
    """A store that, when told to, loses the reply of a write that succeeded: the write is done,
    then `MemoryStoreUnavailable` is raised (as if the connection broke before the answer came
    back), so Temporal retries the tool with the same idempotency key."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.description = f"flaky {inner.description}"
        self.lose_replies: dict[str, int] = {"remember": 0, "forget": 0}
        self.calls: dict[str, int] = {"remember": 0, "forget": 0}

    def _maybe_lose(self, operation: str) -> None:
        self.calls[operation] += 1
        if self.lose_replies[operation] > 0:
            self.lose_replies[operation] -= 1
            raise MemoryStoreUnavailable(f"connection lost after {operation} (test)")

    async def migrate(self) -> int:
        return await self.inner.migrate()

    async def remember(
        self, scope: str, text: str, tags: Sequence[str], idempotency_key: str
    ) -> Memory:
        memory = await self.inner.remember(scope, text, tags, idempotency_key)
        self._maybe_lose("remember")
        return memory

    async def recall(self, scope: str, query: str, limit: int) -> list[Memory]:
        return await self.inner.recall(scope, query, limit)

    async def forget(self, scope: str, memory_id: str, idempotency_key: str) -> bool:
        forgotten = await self.inner.forget(scope, memory_id, idempotency_key)
        self._maybe_lose("forget")
        return forgotten

    async def count(self, scope: str) -> int:
        return await self.inner.count(scope)

    async def close(self) -> None:
        await self.inner.close()
