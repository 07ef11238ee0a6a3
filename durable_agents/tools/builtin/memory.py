"""Long-term memory tools: `remember`, `recall`, `forget`.

Each is scoped by the run's `memory_scope` (a user id, say): they are offered only to runs that
have one (`requires_scope=True`), read it as `ctx.scope`, and the store never lets one scope read
or delete another's memories. The store (SQLite by default, PostgreSQL with
`MEMORY_DATABASE_URL`; see `tools.memory_store`) is opened by the worker at start and reaches
the tools as `ctx.memory`.

`remember` is idempotent per call: the memory is stored under the call's idempotency key
(`<workflow id>/<turn>/<call id>`, unique in the table), so an attempt retried after a crash, or
a call replayed, returns the memory the first attempt stored instead of a second copy. A database
that cannot be reached raises `MemoryStoreUnavailable` (a `ConnectionError`), retried by Temporal;
anything else goes back to the model at once. `forget` is idempotent per call too: a retry of
a call that already deleted the memory reports the deletion, not "no memory".
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from durable_agents.tools.definition import ToolContext, ToolError, tool
from durable_agents.tools.memory_store import Memory, MemoryStore, search_words

MAX_MEMORY_CHARS = 4000
MAX_TAGS = 10
MAX_RECALL = 50

Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40)]


class RememberArgs(BaseModel):
    """Arguments of the `remember` tool."""

    text: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_MEMORY_CHARS)
    ] = Field(
        description="The fact to remember, as a self-contained sentence, e.g. "
        "'The user prefers tea to coffee.'"
    )
    tags: list[Tag] = Field(
        default=[],
        max_length=MAX_TAGS,
        description="Optional short labels that help find it later, e.g. ['preference', 'food'].",
    )


class RecallArgs(BaseModel):
    """Arguments of the `recall` tool."""

    query: str = Field(
        default="",
        max_length=500,
        description="Words to look for (any of them; best matches first). Empty: the most "
        "recent memories.",
    )
    limit: int = Field(default=5, ge=1, le=MAX_RECALL, description="How many memories at most.")


class ForgetArgs(BaseModel):
    """Arguments of the `forget` tool."""

    memory_id: str = Field(
        min_length=1,
        max_length=100,
        description="The id `remember` or `recall` gave, e.g. 'mem_1a2b3c4d5e6f'.",
    )


def memory_of(ctx: ToolContext, tool_name: str) -> tuple[MemoryStore, str]:
    """The worker's store and the run's scope, or a `ToolError` the model can read."""
    if ctx.scope is None:
        raise ToolError(
            f"{tool_name} needs a memory scope, and this run has none (start it with "
            "memory_scope set, e.g. a user id)"
        )
    if ctx.memory is None:
        raise ToolError("long-term memory is not set up on this worker")
    return ctx.memory, ctx.scope


def describe(memory: Memory) -> dict[str, object]:
    """A memory as the model reads it."""
    return {
        "id": memory.id,
        "text": memory.text,
        "tags": memory.tags,
        "created_at": memory.created_at.isoformat(timespec="seconds"),
    }


@tool(start_to_close_timeout=timedelta(seconds=15), requires_scope=True)
async def remember(args: RememberArgs, ctx: ToolContext) -> str:
    """Store a fact in long-term memory, to recall in later conversations (for this user
    only). Returns the memory's id."""
    store, scope = memory_of(ctx, "remember")
    tags = list(dict.fromkeys(args.tags))
    memory = await store.remember(scope, args.text, tags, ctx.idempotency_key)
    return f"remembered as {memory.id}"


@tool(start_to_close_timeout=timedelta(seconds=15), requires_scope=True)
async def recall(args: RecallArgs, ctx: ToolContext) -> str:
    """Search long-term memory (full text, any of the words; best matches first). Returns a
    JSON list of memories with their id, text, tags and creation time."""
    store, scope = memory_of(ctx, "recall")
    found = await store.recall(scope, args.query, args.limit)
    if not found:
        return "no memories match" if search_words(args.query) else "no memories yet"
    return json.dumps([describe(m) for m in found], ensure_ascii=False)


@tool(start_to_close_timeout=timedelta(seconds=15), requires_scope=True)
async def forget(args: ForgetArgs, ctx: ToolContext) -> str:
    """Delete one memory from long-term memory, by its id."""
    store, scope = memory_of(ctx, "forget")
    if not await store.forget(scope, args.memory_id, ctx.idempotency_key):
        raise ToolError(f"no memory {args.memory_id} in this scope")
    return f"forgot {args.memory_id}"
