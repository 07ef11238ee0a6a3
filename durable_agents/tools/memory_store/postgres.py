"""The PostgreSQL memory store: full-text search with `tsvector` / `websearch_to_tsquery`, ranked
by `ts_rank`, through `psycopg` 3 (async). Used when `MEMORY_DATABASE_URL` is set (see
`tools.memory_store`).

Schema (version 1): `memories` (`id` the model sees, `scope`, `text`, `tags text[]`, a unique
`idempotency_key`, `created_at timestamptz`, and `search`, the `english` tsvector of the text and
the tags without accents, GIN-indexed), and `memory_forgotten` (the idempotency key and memory id
of each completed `forget`, so a retried one reports its deletion). `memory_schema_version`
records the migrations applied; they run in one transaction under an advisory lock, so workers
starting together apply each one once.

One connection in autocommit mode (every write is one atomic statement); a connection that
breaks is replaced on the next call, and the failed call raises `MemoryStoreUnavailable`, which
the tool activity retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg

from durable_agents.tools.memory_store import (
    SCHEMA_VERSION,
    SEARCH_LANGUAGE,
    Memory,
    MemoryStore,
    MemoryStoreError,
    MemoryStoreUnavailable,
    fold_accents,
    new_memory_id,
    search_words,
)

MIGRATION_LOCK = 0x6D656D6F7279  # pg_advisory_xact_lock key ("memory")
CONNECT_TIMEOUT_SECONDS = 10

MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            """CREATE TABLE memories (
                id text PRIMARY KEY,
                scope text NOT NULL,
                text text NOT NULL,
                tags text[] NOT NULL DEFAULT '{}',
                idempotency_key text NOT NULL UNIQUE,
                created_at timestamptz NOT NULL,
                search tsvector NOT NULL
            )""",
            "CREATE INDEX memories_scope_created ON memories (scope, created_at DESC)",
            "CREATE INDEX memories_search ON memories USING gin (search)",
            """CREATE TABLE memory_forgotten (
                idempotency_key text PRIMARY KEY,
                memory_id text NOT NULL,
                scope text NOT NULL,
                forgotten_at timestamptz NOT NULL DEFAULT now()
            )""",
        ],
    ),
]
"""Schema versions in order: (version, statements). Append; never edit an applied one."""

assert MIGRATIONS[-1][0] == SCHEMA_VERSION

_COLUMNS = "id, text, tags, created_at"


def _memory(row: Sequence[Any]) -> Memory:
    return Memory(id=row[0], text=row[1], tags=list(row[2] or []), created_at=row[3])


def _tsquery_text(words: list[str]) -> str:
    """`websearch_to_tsquery` text matching any of `words` (its `or` operator between them; the
    word "or" itself would read as the operator, so it is left out)."""
    return " or ".join(word for word in words if word != "or")


class PostgresMemoryStore(MemoryStore):
    """Memories in a PostgreSQL database (see the module docstring)."""

    def __init__(self, url: str, connection: psycopg.AsyncConnection[Any]) -> None:
        self._url = url
        self._connection: psycopg.AsyncConnection[Any] | None = connection
        self._lock = asyncio.Lock()
        info = connection.info
        self.description = f"PostgreSQL database {info.dbname!r} on {info.host}:{info.port}"

    @classmethod
    async def connect(cls, url: str) -> PostgresMemoryStore:
        """Connect to `url` (a `postgresql://` URL)."""
        try:
            connection = await cls._open(url)
        except MemoryStoreUnavailable as error:
            raise MemoryStoreUnavailable(f"cannot reach the memory database: {error}") from None
        return cls(url, connection)

    @staticmethod
    async def _open(url: str) -> psycopg.AsyncConnection[Any]:
        try:
            return await psycopg.AsyncConnection.connect(
                url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
            )
        except psycopg.OperationalError as error:
            raise MemoryStoreUnavailable(str(error).strip()) from error

    async def _conn(self) -> psycopg.AsyncConnection[Any]:
        """The connection, replaced first if it was closed or broke."""
        async with self._lock:
            connection = self._connection
            if connection is None or connection.closed or connection.broken:
                self._connection = connection = await self._open(self._url)
            return connection

    async def _fetch(self, query: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        connection = await self._conn()
        try:
            cursor = await connection.execute(query, params)
            return await cursor.fetchall() if cursor.description else []
        except psycopg.OperationalError as error:
            raise MemoryStoreUnavailable(f"memory database unavailable: {error}") from error

    async def _rowcount(self, query: str, params: Sequence[Any] | dict[str, Any]) -> int:
        connection = await self._conn()
        try:
            cursor = await connection.execute(query, params)
            return cursor.rowcount
        except psycopg.OperationalError as error:
            raise MemoryStoreUnavailable(f"memory database unavailable: {error}") from error

    async def migrate(self) -> int:
        connection = await self._conn()
        try:
            async with connection.transaction():
                await connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                await connection.execute(
                    "CREATE TABLE IF NOT EXISTS memory_schema_version ("
                    "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
                )
                cursor = await connection.execute(
                    "SELECT coalesce(max(version), 0) FROM memory_schema_version"
                )
                row = await cursor.fetchone()
                current = int(row[0]) if row else 0
                if current > SCHEMA_VERSION:
                    raise MemoryStoreError(
                        f"the memory database has schema version {current}, newer than this "
                        f"worker knows ({SCHEMA_VERSION}): upgrade the worker"
                    )
                for version, statements in MIGRATIONS:
                    if version <= current:
                        continue
                    for statement in statements:
                        await connection.execute(statement)
                    await connection.execute(
                        "INSERT INTO memory_schema_version (version) VALUES (%s)", (version,)
                    )
                    current = version
        except psycopg.OperationalError as error:
            raise MemoryStoreUnavailable(f"memory database unavailable: {error}") from error
        return current

    async def remember(
        self, scope: str, text: str, tags: Sequence[str], idempotency_key: str
    ) -> Memory:
        await self._rowcount(
            "INSERT INTO memories (id, scope, text, tags, idempotency_key, created_at, search) "
            "VALUES (%s, %s, %s, %s, %s, %s, to_tsvector(%s::regconfig, %s)) "
            "ON CONFLICT (idempotency_key) DO NOTHING",
            (
                new_memory_id(),
                scope,
                text,
                list(tags),
                idempotency_key,
                datetime.now(UTC),
                SEARCH_LANGUAGE,
                fold_accents(" ".join([text, *tags])),
            ),
        )
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM memories WHERE idempotency_key = %s AND scope = %s",
            (idempotency_key, scope),
        )
        if not rows:
            raise MemoryStoreError(f"idempotency key {idempotency_key!r} belongs to another scope")
        return _memory(rows[0])

    async def recall(self, scope: str, query: str, limit: int) -> list[Memory]:
        words = search_words(query)
        if not words:
            rows = await self._fetch(
                f"SELECT {_COLUMNS} FROM memories WHERE scope = %s "
                "ORDER BY created_at DESC, id LIMIT %s",
                (scope, limit),
            )
        else:
            rows = await self._fetch(
                f"SELECT {_COLUMNS} FROM memories, "
                "websearch_to_tsquery(%(language)s::regconfig, %(query)s) AS query "
                "WHERE scope = %(scope)s AND search @@ query "
                "ORDER BY ts_rank(search, query) DESC, created_at DESC, id LIMIT %(limit)s",
                {
                    "language": SEARCH_LANGUAGE,
                    "query": _tsquery_text(words),
                    "scope": scope,
                    "limit": limit,
                },
            )
        return [_memory(row) for row in rows]

    async def forget(self, scope: str, memory_id: str, idempotency_key: str) -> bool:
        # One statement: the delete and the record of this call's deletion commit together.
        deleted = await self._rowcount(
            "WITH gone AS (DELETE FROM memories WHERE id = %(id)s AND scope = %(scope)s "
            "RETURNING id) "
            "INSERT INTO memory_forgotten (idempotency_key, memory_id, scope) "
            "SELECT %(key)s, id, %(scope)s FROM gone",
            {"id": memory_id, "scope": scope, "key": idempotency_key},
        )
        if deleted > 0:
            return True
        rows = await self._fetch(  # already gone: by this very call (a retry), or never there
            "SELECT 1 FROM memory_forgotten "
            "WHERE idempotency_key = %s AND memory_id = %s AND scope = %s",
            (idempotency_key, memory_id, scope),
        )
        return bool(rows)

    async def count(self, scope: str) -> int:
        rows = await self._fetch("SELECT count(*) FROM memories WHERE scope = %s", (scope,))
        return int(rows[0][0]) if rows else 0

    async def close(self) -> None:
        async with self._lock:
            if self._connection is not None:
                await self._connection.close()
                self._connection = None
