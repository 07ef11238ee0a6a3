"""The embedded memory store: one SQLite file, FTS5 full-text search ranked by bm25, through
`aiosqlite` (the default; see `tools.memory_store`).

Schema (version 1): `memories` (an integer `seq` key that FTS5 indexes by, a unique `id` the
model sees, `scope`, `text`, `tags` as a JSON array, a unique `idempotency_key`, `created_at`
as ISO 8601 UTC) and `memories_fts`, an external-content FTS5 table over text and tags (porter
stemming), kept in step by triggers; `memory_forgotten` (the idempotency key and memory id of
each completed `forget`, so a retried one reports its deletion). `memory_schema_version`
records the migrations applied.

The connection is in autocommit mode, so a single-statement write is atomic (with its trigger);
`forget`, two statements, is one transaction; writes take a lock, since every call shares the
connection. The file is in WAL mode with a busy timeout, so several workers can share it.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from durable_agents.tools.memory_store import (
    SCHEMA_VERSION,
    Memory,
    MemoryStore,
    MemoryStoreError,
    MemoryStoreUnavailable,
    new_memory_id,
    search_words,
)

BUSY_TIMEOUT_MS = 5000

MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            """CREATE TABLE memories (
                seq INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                scope TEXT NOT NULL,
                text TEXT NOT NULL,
                tags TEXT NOT NULL DEFAULT '[]',
                idempotency_key TEXT NOT NULL UNIQUE,
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX memories_scope_created ON memories (scope, created_at)",
            """CREATE TABLE memory_forgotten (
                idempotency_key TEXT PRIMARY KEY,
                memory_id TEXT NOT NULL,
                scope TEXT NOT NULL,
                forgotten_at TEXT NOT NULL
            )""",
            """CREATE VIRTUAL TABLE memories_fts USING fts5(
                text, tags, content='memories', content_rowid='seq',
                tokenize='porter unicode61 remove_diacritics 2'
            )""",
            """CREATE TRIGGER memories_after_insert AFTER INSERT ON memories BEGIN
                INSERT INTO memories_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
            END""",
            """CREATE TRIGGER memories_after_delete AFTER DELETE ON memories BEGIN
                INSERT INTO memories_fts (memories_fts, rowid, text, tags)
                VALUES ('delete', old.seq, old.text, old.tags);
            END""",
            """CREATE TRIGGER memories_after_update AFTER UPDATE ON memories BEGIN
                INSERT INTO memories_fts (memories_fts, rowid, text, tags)
                VALUES ('delete', old.seq, old.text, old.tags);
                INSERT INTO memories_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
            END""",
        ],
    ),
]
"""Schema versions in order: (version, statements). Append; never edit an applied one."""

assert MIGRATIONS[-1][0] == SCHEMA_VERSION

_COLUMNS = "m.id, m.text, m.tags, m.created_at"


def _memory(row: Any) -> Memory:
    return Memory(
        id=row[0], text=row[1], tags=json.loads(row[2]), created_at=datetime.fromisoformat(row[3])
    )


def _translated(error: sqlite3.OperationalError) -> Exception:
    """A locked or busy file is transient (`MemoryStoreUnavailable`, retried); the rest is not."""
    text = str(error).lower()
    if "locked" in text or "busy" in text or "unable to open" in text:
        return MemoryStoreUnavailable(f"memory database busy: {error}")
    return error


async def _use_wal(db: aiosqlite.Connection) -> None:
    """Put the file in WAL mode (it stays so). Switching fails at once, without waiting for the
    busy timeout, while another connection switches it too (workers starting together on a new
    file), so that is retried for up to the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            await db.execute_fetchall("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error).lower() or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


class SQLiteMemoryStore(MemoryStore):
    """Memories in one SQLite file (see the module docstring)."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        self._db = db
        self._write = asyncio.Lock()
        """Held by a write that spans statements: the connection is shared by every call."""
        self.path = path
        self.description = f"SQLite file {path}"

    @classmethod
    async def connect(cls, path: Path) -> SQLiteMemoryStore:
        """Open (creating the file and its folder if needed) the database at `path`."""
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = await aiosqlite.connect(path, isolation_level=None)
        except (OSError, sqlite3.Error) as error:
            raise MemoryStoreError(f"cannot open the memory database {path}: {error}") from None
        try:
            await db.execute_fetchall(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await _use_wal(db)
        except sqlite3.Error as error:
            await db.close()
            raise MemoryStoreError(f"cannot open the memory database {path}: {error}") from None
        return cls(db, path)

    async def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; its row count. (Statements are always run to completion: a
        half-read one would keep a read lock and make this connection's next write fail.)"""
        try:
            async with self._db.execute(sql, params) as cursor:
                return cursor.rowcount
        except sqlite3.OperationalError as error:
            raise _translated(error) from error

    async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row of one query."""
        try:
            return list(await self._db.execute_fetchall(sql, params))
        except sqlite3.OperationalError as error:
            raise _translated(error) from error

    async def migrate(self) -> int:
        async with self._write:
            return await self._migrate()

    async def _migrate(self) -> int:
        await self._execute("BEGIN IMMEDIATE")  # one migrator at a time, even across processes
        try:
            await self._execute(
                "CREATE TABLE IF NOT EXISTS memory_schema_version ("
                "version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            rows = await self._fetch("SELECT coalesce(max(version), 0) FROM memory_schema_version")
            current = int(rows[0][0])
            if current > SCHEMA_VERSION:
                raise MemoryStoreError(
                    f"the memory database {self.path} has schema version {current}, newer than "
                    f"this worker knows ({SCHEMA_VERSION}): upgrade the worker"
                )
            for version, statements in MIGRATIONS:
                if version <= current:
                    continue
                for statement in statements:
                    await self._execute(statement)
                await self._execute(
                    "INSERT INTO memory_schema_version (version, applied_at) VALUES (?, ?)",
                    (version, datetime.now(UTC).isoformat()),
                )
                current = version
            await self._execute("COMMIT")
        except BaseException:
            await self._db.execute("ROLLBACK")
            raise
        return current

    async def remember(
        self, scope: str, text: str, tags: Sequence[str], idempotency_key: str
    ) -> Memory:
        async with self._write:  # one statement, but never inside another call's transaction
            await self._execute(
                "INSERT INTO memories (id, scope, text, tags, idempotency_key, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING",
                (
                    new_memory_id(),
                    scope,
                    text,
                    json.dumps(list(tags), ensure_ascii=False),
                    idempotency_key,
                    datetime.now(UTC).isoformat(),
                ),
            )
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM memories m WHERE m.idempotency_key = ? AND m.scope = ?",
            (idempotency_key, scope),
        )
        if not rows:
            raise MemoryStoreError(f"idempotency key {idempotency_key!r} belongs to another scope")
        return _memory(rows[0])

    async def recall(self, scope: str, query: str, limit: int) -> list[Memory]:
        words = search_words(query)
        if not words:
            rows = await self._fetch(
                f"SELECT {_COLUMNS} FROM memories m WHERE m.scope = ? "
                "ORDER BY m.created_at DESC, m.seq DESC LIMIT ?",
                (scope, limit),
            )
        else:
            match = " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
            rows = await self._fetch(
                f"SELECT {_COLUMNS} FROM memories_fts "
                "JOIN memories m ON m.seq = memories_fts.rowid "
                "WHERE memories_fts MATCH ? AND m.scope = ? "
                "ORDER BY bm25(memories_fts), m.created_at DESC, m.seq DESC LIMIT ?",
                (match, scope, limit),
            )
        return [_memory(row) for row in rows]

    async def forget(self, scope: str, memory_id: str, idempotency_key: str) -> bool:
        async with self._write:
            await self._execute("BEGIN IMMEDIATE")
            try:
                deleted = await self._execute(
                    "DELETE FROM memories WHERE id = ? AND scope = ?", (memory_id, scope)
                )
                if deleted > 0:
                    await self._execute(
                        "INSERT INTO memory_forgotten "
                        "(idempotency_key, memory_id, scope, forgotten_at) VALUES (?, ?, ?, ?)",
                        (idempotency_key, memory_id, scope, datetime.now(UTC).isoformat()),
                    )
                    forgotten = True
                else:  # already gone: by this very call (a retry), or never there
                    rows = await self._fetch(
                        "SELECT 1 FROM memory_forgotten "
                        "WHERE idempotency_key = ? AND memory_id = ? AND scope = ?",
                        (idempotency_key, memory_id, scope),
                    )
                    forgotten = bool(rows)
                await self._execute("COMMIT")
            except BaseException:
                await self._db.execute("ROLLBACK")
                raise
        return forgotten

    async def count(self, scope: str) -> int:
        rows = await self._fetch("SELECT count(*) FROM memories WHERE scope = ?", (scope,))
        return int(rows[0][0])

    async def close(self) -> None:
        await self._db.close()
