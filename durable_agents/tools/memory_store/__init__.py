"""Long-term memory storage for the `remember` / `recall` / `forget` tools.

`MemoryStore` is the interface the tools use; two implementations follow it:

- `tools.memory_store.sqlite.SQLiteMemoryStore`: the embedded default, one file
  (`MEMORY_DATABASE_PATH`, default `.data/memory.db`), full-text search with FTS5 ranked by bm25,
  through `aiosqlite`.
- `tools.memory_store.postgres.PostgresMemoryStore`: used when `MEMORY_DATABASE_URL` is set;
  full-text search with `tsvector` / `websearch_to_tsquery` ranked by `ts_rank`, through
  `psycopg` 3 (async).

`open_memory_store(url=..., path=...)` picks one, connects and migrates the schema (a version
table; safe to run on every worker start and from several workers at once). The worker opens it
once at start, hands it to the tool activities (`ToolContext.memory`) and closes it on shutdown.

Rules both stores keep (`tests/test_memory_tools.py` runs one suite against both):
- every read and write names a scope (the run's `memory_scope`); nothing crosses scopes;
- writes are idempotent per idempotency key: a retried or replayed `remember` returns the
  memory the first attempt stored (the key is a unique column), never a second copy; a retried
  `forget` reports the deletion its first attempt made (a small table of completed forgets
  keeps the key and the memory id, not the text);
- `recall` matches any word of the query (stemmed English), best matches first, then newest;
  a query with no words lists the newest memories.

The drivers are imported only when a store is opened, so importing this package (as the tools
and the workflow's tool registry do) costs nothing.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from durable_agents.runtime.extras import require

__all__ = [
    "MAX_QUERY_WORDS",
    "Memory",
    "MemoryStore",
    "MemoryStoreError",
    "MemoryStoreUnavailable",
    "fold_accents",
    "new_memory_id",
    "open_memory_store",
    "search_words",
]

SCHEMA_VERSION = 1
"""The newest schema version the stores in this code know (see each store's MIGRATIONS)."""

MAX_QUERY_WORDS = 32
"""A recall query uses at most this many words."""

SEARCH_LANGUAGE = "english"
"""Stemming language of the search (FTS5's porter tokenizer; PostgreSQL's `english` config)."""


class Memory(BaseModel):
    """One stored memory, as `recall` returns it."""

    id: str
    text: str
    tags: list[str] = []
    created_at: datetime


class MemoryStoreError(Exception):
    """The store cannot do what was asked (a schema newer than this code, a key clash)."""


class MemoryStoreUnavailable(ConnectionError):
    """The database cannot be reached right now (connection lost, file locked). A
    `ConnectionError`, so the tool activity treats it as transient and Temporal retries it."""


class MemoryStore(ABC):
    """Memories kept per scope. Every method names the scope; none reads across scopes."""

    description: str = "memory store"
    """Where the memories live, for logs (never holds a password)."""

    @abstractmethod
    async def migrate(self) -> int:
        """Create or upgrade the schema; idempotent. Returns the schema version now in place."""

    @abstractmethod
    async def remember(
        self, scope: str, text: str, tags: Sequence[str], idempotency_key: str
    ) -> Memory:
        """Store a memory, or return the one already stored under `idempotency_key`."""

    @abstractmethod
    async def recall(self, scope: str, query: str, limit: int) -> list[Memory]:
        """Memories of `scope` matching any word of `query`, best first (newest on ties)."""

    @abstractmethod
    async def forget(self, scope: str, memory_id: str, idempotency_key: str) -> bool:
        """Delete a memory of `scope`; False when `scope` has no memory with that id. True
        again when this same call (`idempotency_key`) already deleted it: a retry."""

    @abstractmethod
    async def count(self, scope: str) -> int:
        """How many memories `scope` has."""

    @abstractmethod
    async def close(self) -> None:
        """Release the connection."""


def new_memory_id() -> str:
    """A fresh memory id, short enough for a model to copy: `mem_` and 12 hex digits."""
    return f"mem_{secrets.token_hex(6)}"


_WORD = re.compile(r"\w+", re.UNICODE)


def fold_accents(text: str) -> str:
    """`text` without diacritics ("café" -> "cafe"), so searches ignore accents in both stores
    (FTS5's `remove_diacritics` does the same; PostgreSQL's `english` config does not)."""
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", kept)


def search_words(query: str) -> list[str]:
    """The words of a recall query, lower-cased, without accents, unique, in order (at most
    MAX_QUERY_WORDS).

    Both stores search for these words only (any of them), so query syntax never reaches the
    database and no query is ever a syntax error."""
    words: list[str] = []
    for word in _WORD.findall(fold_accents(query).lower()):
        word = word.strip("_")
        if word and word not in words:
            words.append(word)
    return words[:MAX_QUERY_WORDS]


async def open_memory_store(*, url: str | None, path: Path) -> MemoryStore:
    """The PostgreSQL store when `url` is set, else the SQLite file at `path`; connected and
    migrated. Raises `MemoryStoreError` / `MemoryStoreUnavailable` with a clear message."""
    store: MemoryStore
    if url:
        require("postgres", "MEMORY_DATABASE_URL (a PostgreSQL memory)")
        from durable_agents.tools.memory_store.postgres import PostgresMemoryStore

        store = await PostgresMemoryStore.connect(url)
    else:
        from durable_agents.tools.memory_store.sqlite import SQLiteMemoryStore

        store = await SQLiteMemoryStore.connect(path)
    try:
        await store.migrate()
    except BaseException:
        await store.close()
        raise
    return store
