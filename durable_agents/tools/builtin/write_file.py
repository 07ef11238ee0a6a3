"""The `write_file` tool: write a UTF-8 text file inside the worker's workspace folder.

It changes the world, so it requires approval by default: the run waits until a person
approves (possibly with edited arguments) or rejects it. The path is confined like
`read_file`'s. The write is atomic and idempotent: the content goes to a temporary file named
after the call's idempotency key and is then renamed over the target, so a retry after a crash
rewrites the same bytes and a reader never sees half a file.

Its `precheck` applies the workspace's path rule to the path string (`path_problem`), so a
write that can never succeed (`../outside.txt`, an absolute path) is refused before anyone is
asked to approve it; the symlink check needs the filesystem and runs in the activity.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel, Field

from durable_agents.tools.builtin.workspace import path_problem, resolve_in_workspace
from durable_agents.tools.definition import ToolContext, ToolError, tool

MAX_CONTENT_CHARS = 1_000_000


class WriteFileArgs(BaseModel):
    """Arguments of the `write_file` tool."""

    path: str = Field(
        min_length=1,
        max_length=4096,
        description="Path of the file relative to the workspace folder, e.g. 'notes/todo.md'.",
    )
    content: str = Field(max_length=MAX_CONTENT_CHARS, description="The full text to write.")
    overwrite: bool = Field(default=True, description="Replace the file if it exists.")


def write_file_precheck(args: WriteFileArgs) -> str | None:
    """Why this write can never succeed, from the path string alone (pure: see
    `ToolOptions.precheck`), or None."""
    return path_problem(args.path)


def write_text_file(workspace: Path, args: WriteFileArgs, idempotency_key: str) -> str:
    """Write `args.content` to `args.path` inside `workspace` (blocking, atomic)."""
    target = resolve_in_workspace(workspace, args.path, must_exist=False)
    if target.is_dir():
        raise ToolError(f"{args.path!r} is a directory")
    if target.exists() and not args.overwrite:
        raise ToolError(f"{args.path!r} exists and overwrite is false")
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.parent.resolve().is_relative_to(workspace.resolve()):
        raise ToolError(f"{args.path!r} is outside the workspace")
    tag = hashlib.sha256(idempotency_key.encode()).hexdigest()[:16]
    temporary = target.with_name(f".{target.name}.{tag}.tmp")
    data = args.content.encode("utf-8")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, target)
    return f"wrote {len(data)} bytes to {args.path}"


@tool(
    start_to_close_timeout=timedelta(seconds=10),
    requires_approval=True,
    precheck=write_file_precheck,
)
async def write_file(args: WriteFileArgs, ctx: ToolContext) -> str:
    """Write a text file in the workspace folder (creates folders; replaces the file unless
    overwrite is false). A person must approve each write."""
    return await asyncio.to_thread(write_text_file, ctx.workspace, args, ctx.idempotency_key)
