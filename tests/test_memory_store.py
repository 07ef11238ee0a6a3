"""The long-term memory stores, SQLite and PostgreSQL, through one suite (each test runs once per
store): remember, recall ranking, forget, scope isolation, idempotent writes, migrations; and
the memory tools called directly (their observations and refusals)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from pydantic import ValidationError

from durable_agents.runtime.settings import EnvironmentSettings, SettingsError
from durable_agents.tools.builtin.memory import (
    ForgetArgs,
    RecallArgs,
    RememberArgs,
    forget,
    recall,
    remember,
)
from durable_agents.tools.definition import ToolContext, ToolError
from durable_agents.tools.memory_store import (
    SCHEMA_VERSION,
    MemoryStore,
    MemoryStoreError,
    MemoryStoreUnavailable,
    open_memory_store,
    search_words,
)
from testkit.crash_tools import free_port
from tests.memory_support import (  # noqa: F401  (the *_fixture names register fixtures)
    MemoryTarget,
    fresh_database,
    memory_target_fixture,
    postgres_server_url_fixture,
    store_fixture,
)


async def schema_versions(target: MemoryTarget) -> list[int]:
    """The rows of the schema version table, read without the store."""
    if target.url:
        async with await psycopg.AsyncConnection.connect(target.url) as connection:
            cursor = await connection.execute(
                "SELECT version FROM memory_schema_version ORDER BY version"
            )
            return [row[0] for row in await cursor.fetchall()]
    with sqlite3.connect(target.path) as connection:
        rows = connection.execute("SELECT version FROM memory_schema_version ORDER BY version")
        return [row[0] for row in rows]


# -- remember and recall --------------------------------------------------------------------------


async def test_remember_then_recall(store: MemoryStore) -> None:
    stored = await store.remember("alice", "Alice's favourite colour is blue.", ["pref"], "k1")
    assert stored.id.startswith("mem_")
    assert (stored.text, stored.tags) == ("Alice's favourite colour is blue.", ["pref"])
    assert stored.created_at.tzinfo is not None
    found = await store.recall("alice", "favourite colour", 5)
    assert found == [stored]
    assert await store.count("alice") == 1


async def test_recall_ranks_the_best_match_first(store: MemoryStore) -> None:
    await store.remember("alice", "Alice likes green tea in the morning.", [], "k1")
    blue = await store.remember("alice", "Alice's favourite colour is blue.", [], "k2")
    await store.remember("alice", "Bob's favourite colour is red; he likes coffee.", [], "k3")
    await store.remember("alice", "The meeting is on Tuesday.", [], "k4")
    found = await store.recall("alice", "favourite colour blue", 10)
    assert found[0] == blue  # all three words
    assert {m.text for m in found} == {
        "Alice's favourite colour is blue.",
        "Bob's favourite colour is red; he likes coffee.",
    }  # any word matches; memories with none are left out


async def test_recall_stems_words_and_searches_tags(store: MemoryStore) -> None:
    coffee = await store.remember("alice", "Drinks two coffees a day.", ["beverages"], "k1")
    await store.remember("alice", "Lives in Paris.", ["home"], "k2")
    assert await store.recall("alice", "coffee", 5) == [coffee]
    assert await store.recall("alice", "beverage", 5) == [coffee]


async def test_recall_limit_and_empty_query_lists_the_newest(store: MemoryStore) -> None:
    for index in range(4):
        await store.remember("alice", f"note number {index}", [], f"k{index}")
    newest = await store.recall("alice", "", 2)
    assert [m.text for m in newest] == ["note number 3", "note number 2"]
    assert len(await store.recall("alice", "note", 3)) == 3
    assert await store.recall("alice", "  ?!  ", 1) == newest[:1]


async def test_query_syntax_never_reaches_the_database(store: MemoryStore) -> None:
    tea = await store.remember("alice", "Likes tea, not coffee.", [], "k1")
    for query in ['"unbalanced', "tea AND OR NOT", "(tea*", "-tea", "tea:*", "NEAR(tea)", "or"]:
        found = await store.recall("alice", query, 5)
        assert found in ([tea], []), query
    assert search_words('Tea, "coffee" and TEA!') == ["tea", "coffee", "and"]


async def test_unicode_text_round_trips(store: MemoryStore) -> None:
    stored = await store.remember("alice", "Aime le café à Montréal 北京", ["été"], "k1")
    assert await store.recall("alice", "cafe montreal", 5) == [stored]
    assert (await store.recall("alice", "café", 5))[0].tags == ["été"]


# -- forget ---------------------------------------------------------------------------------------


async def test_forget_removes_a_memory(store: MemoryStore) -> None:
    kept = await store.remember("alice", "Likes tea.", [], "k1")
    gone = await store.remember("alice", "Likes coffee.", [], "k2")
    assert await store.forget("alice", gone.id, "f1") is True
    assert await store.recall("alice", "likes", 5) == [kept]
    assert await store.count("alice") == 1
    assert await store.forget("alice", "mem_000000000000", "f2") is False


async def test_a_retried_forget_reports_its_deletion(store: MemoryStore) -> None:
    memory = await store.remember("alice", "Likes tea.", [], "k1")
    assert await store.forget("alice", memory.id, "f1") is True
    assert await store.forget("alice", memory.id, "f1") is True  # the same call, retried
    assert await store.forget("alice", memory.id, "f2") is False  # another call: gone


# -- scopes ---------------------------------------------------------------------------------------


async def test_one_scope_never_reads_or_deletes_another_scopes_memories(
    store: MemoryStore,
) -> None:
    alice = await store.remember("alice", "My favourite colour is blue.", ["colour"], "k1")
    bob = await store.remember("bob", "My favourite colour is red.", ["colour"], "k2")
    assert await store.recall("alice", "favourite colour", 10) == [alice]
    assert await store.recall("bob", "favourite colour", 10) == [bob]
    assert await store.recall("bob", "blue", 10) == []
    assert await store.recall("bob", "", 10) == [bob]
    assert await store.recall("carol", "colour", 10) == []
    assert await store.forget("bob", alice.id, "f1") is False
    assert await store.recall("alice", "blue", 10) == [alice]
    assert (await store.count("alice"), await store.count("bob")) == (1, 1)


# -- idempotent writes ----------------------------------------------------------------------------


async def test_remember_is_idempotent_per_key(store: MemoryStore) -> None:
    first = await store.remember("alice", "Likes tea.", [], "wf-1/1/call_1")
    again = await store.remember("alice", "Likes tea.", [], "wf-1/1/call_1")
    assert again == first
    assert await store.count("alice") == 1
    other = await store.remember("alice", "Likes tea.", [], "wf-1/2/call_1")  # another call
    assert other.id != first.id
    assert await store.count("alice") == 2


async def test_concurrent_attempts_with_one_key_store_once(store: MemoryStore) -> None:
    results = await asyncio.gather(
        *(store.remember("alice", "Likes tea.", [], "wf-1/1/call_1") for _ in range(5))
    )
    assert len({m.id for m in results}) == 1
    assert await store.count("alice") == 1


async def test_a_key_of_another_scope_is_refused(store: MemoryStore) -> None:
    await store.remember("alice", "Likes tea.", [], "k1")
    with pytest.raises(MemoryStoreError, match="another scope"):
        await store.remember("bob", "Likes tea.", [], "k1")
    assert await store.count("bob") == 0


# -- migrations -----------------------------------------------------------------------------------


async def test_migration_runs_twice_safely(memory_target: MemoryTarget) -> None:
    first = await memory_target.open()
    try:
        memory = await first.remember("alice", "Likes tea.", [], "k1")
        assert await first.migrate() == SCHEMA_VERSION  # again, on the same connection
    finally:
        await first.close()
    second = await memory_target.open()  # a worker restart: migrates again
    try:
        assert await second.recall("alice", "tea", 5) == [memory]
    finally:
        await second.close()
    assert await schema_versions(memory_target) == list(range(1, SCHEMA_VERSION + 1))


async def test_workers_starting_together_migrate_once(memory_target: MemoryTarget) -> None:
    stores = await asyncio.gather(*(memory_target.open() for _ in range(3)))
    try:
        await stores[0].remember("alice", "Likes tea.", [], "k1")
        assert await stores[2].count("alice") == 1
    finally:
        for opened in stores:
            await opened.close()
    assert await schema_versions(memory_target) == list(range(1, SCHEMA_VERSION + 1))


async def test_a_schema_newer_than_the_worker_is_refused(memory_target: MemoryTarget) -> None:
    opened = await memory_target.open()
    await opened.close()
    newer = SCHEMA_VERSION + 1
    if memory_target.url:
        async with await psycopg.AsyncConnection.connect(memory_target.url) as connection:
            await connection.execute(
                "INSERT INTO memory_schema_version (version) VALUES (%s)", (newer,)
            )
    else:
        with sqlite3.connect(memory_target.path) as connection:
            connection.execute("INSERT INTO memory_schema_version VALUES (?, 'later')", (newer,))
    with pytest.raises(MemoryStoreError, match=f"schema version {newer}, newer than"):
        await memory_target.open()


# -- store-specific -------------------------------------------------------------------------------


async def test_sqlite_creates_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "memory.db"
    opened = await open_memory_store(url=None, path=path)
    await opened.close()
    assert path.is_file()
    assert "SQLite" in opened.description and str(path) in opened.description


async def test_postgres_unreachable_is_a_clear_error() -> None:
    url = f"postgresql://nobody:secret-pw@127.0.0.1:{free_port()}/memory"
    with pytest.raises(MemoryStoreUnavailable, match="cannot reach the memory database") as error:
        await open_memory_store(url=url, path=Path("unused.db"))
    assert "secret-pw" not in str(error.value)


async def test_postgres_connection_lost_is_transient_then_replaced(
    postgres_server_url: str, tmp_path: Path
) -> None:
    url = await fresh_database(postgres_server_url)
    opened = await open_memory_store(url=url, path=tmp_path / "unused.db")
    try:
        await opened.remember("alice", "Likes tea.", [], "k1")
        database = urlsplit(url).path.lstrip("/")
        async with await psycopg.AsyncConnection.connect(
            postgres_server_url, autocommit=True
        ) as admin:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            )
        with pytest.raises(MemoryStoreUnavailable):  # a ConnectionError: Temporal retries it
            await opened.recall("alice", "tea", 5)
        assert [m.text for m in await opened.recall("alice", "tea", 5)] == ["Likes tea."]
    finally:
        await opened.close()


# -- settings -------------------------------------------------------------------------------------


def test_memory_settings() -> None:
    default = EnvironmentSettings.from_env({})
    assert default.memory_database_url is None
    assert default.memory_database_path == Path(".data/memory.db")
    custom = EnvironmentSettings.from_env(
        {
            "MEMORY_DATABASE_URL": "postgresql://agent:pw-123@db:5432/memory",
            "MEMORY_DATABASE_PATH": "/data/memory.db",
        }
    )
    assert custom.memory_database_url is not None
    assert custom.memory_database_url.get_secret_value().endswith("@db:5432/memory")
    assert "pw-123" not in repr(custom)
    assert custom.memory_database_path == Path("/data/memory.db")
    with pytest.raises(SettingsError, match="MEMORY_DATABASE_URL: use a postgresql:// URL") as bad:
        EnvironmentSettings.from_env({"MEMORY_DATABASE_URL": "sqlite:///tmp/secret-name.db"})
    assert "secret-name" not in str(bad.value)


# -- the tools, called directly -------------------------------------------------------------------


def context(store: MemoryStore | None, scope: str | None, key: str = "wf/1/c1") -> ToolContext:
    return ToolContext(
        workspace=Path("."),
        workflow_id="wf",
        call_id="c1",
        idempotency_key=key,
        scope=scope,
        memory=store,
    )


async def test_tools_remember_recall_forget(store: MemoryStore) -> None:
    said = await remember.invoke(
        RememberArgs(text="  Likes green tea. ", tags=["drink", "drink"]), context(store, "al")
    )
    assert said.startswith("remembered as mem_")
    memory_id = said.removeprefix("remembered as ")
    again = await remember.invoke(RememberArgs(text="Likes green tea."), context(store, "al"))
    assert again == said  # the same call (same idempotency key): the same memory
    found = json.loads(await recall.invoke(RecallArgs(query="tea"), context(store, "al")))
    assert [(m["id"], m["text"], m["tags"]) for m in found] == [
        (memory_id, "Likes green tea.", ["drink"])
    ]
    assert set(found[0]) == {"id", "text", "tags", "created_at"}
    assert await recall.invoke(RecallArgs(query="coffee"), context(store, "al")) == (
        "no memories match"
    )
    assert await recall.invoke(RecallArgs(query="tea"), context(store, "bo")) == (
        "no memories match"
    )
    with pytest.raises(ToolError, match=f"no memory {memory_id} in this scope"):
        await forget.invoke(ForgetArgs(memory_id=memory_id), context(store, "bo"))
    assert await forget.invoke(ForgetArgs(memory_id=memory_id), context(store, "al", "f")) == (
        f"forgot {memory_id}"
    )
    with pytest.raises(ToolError, match="no memory mem_nope in this scope"):
        await forget.invoke(ForgetArgs(memory_id="mem_nope"), context(store, "al", "g"))
    assert await recall.invoke(RecallArgs(), context(store, "al")) == "no memories yet"


async def test_tools_refuse_without_a_scope_or_a_store(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="remember needs a memory scope"):
        await remember.invoke(RememberArgs(text="x"), context(None, None))
    with pytest.raises(ToolError, match="not set up on this worker"):
        await recall.invoke(RecallArgs(query="x"), context(None, "alice"))
    assert all(t.options.requires_scope for t in (remember, recall, forget))


def test_tool_arguments_are_bounded() -> None:
    with pytest.raises(ValidationError):
        RememberArgs(text="   ")
    with pytest.raises(ValidationError):
        RememberArgs(text="x", tags=["t"] * 11)
    with pytest.raises(ValidationError):
        RecallArgs(query="x", limit=0)
    schema = remember.schema().parameters
    assert schema["required"] == ["text"]
