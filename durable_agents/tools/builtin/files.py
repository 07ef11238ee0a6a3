"""The `read_file` tool: read a UTF-8 text file from the worker's workspace folder.

The path comes from the model, so it is confined with `resolve_in_workspace` (relative paths
only, no `..`, no symlinks leading outside). The file is opened with `O_NOFOLLOW` (the final
component may not have become a symlink since the check) and `O_NONBLOCK` (so a FIFO cannot
hang the activity), and must be a regular file. Its `precheck` applies the same path rule to
the string (`path_problem`), so when a run's policy makes a read wait for a person, a path that
can never be read is refused before anyone is asked.

Output: the text, at most `max_chars` characters: up to 200 000, or 8 000 000 on a worker that
stores large payloads outside history (`contracts.payload_limits`; the workflow and the
activity check `max_chars` against the worker's limits, and refuse a bigger one naming the
field). Notes for the model are appended in square brackets on their own line after a blank
line: when the text was truncated, and when the file is not valid UTF-8 (undecodable bytes are
replaced with U+FFFD, one per byte, rather than failing). Files containing NUL bytes are
refused as binary. An empty file returns a note saying so, so the model does not mistake it for
a failure.

The blocking I/O runs in a thread (`asyncio.to_thread`) so the worker's event loop is not held.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from durable_agents.contracts.payload_limits import STORED, TODAY, limits, within
from durable_agents.tools.builtin.workspace import path_problem, resolve_in_workspace
from durable_agents.tools.definition import ToolContext, ToolError, tool

DEFAULT_MAX_CHARS = 20_000
MAX_MAX_CHARS = TODAY.text_chars
"""The most `max_chars` without a payload store (`STORED.text_chars` with one)."""

_ESCAPED_BYTES = re.compile("[\udc80-\udcff]")  # what errors="surrogateescape" makes of bad bytes


class ReadFileArgs(BaseModel):
    """Arguments of the `read_file` tool."""

    path: str = Field(
        description="Path of the file relative to the workspace folder, e.g. 'docs/notes.md'.",
        min_length=1,
        max_length=4096,
    )
    max_chars: int = Field(
        default=DEFAULT_MAX_CHARS,
        ge=1,
        le=STORED.text_chars,
        description="Read at most this many characters; longer files are truncated.",
    )

    @field_validator("max_chars")
    @classmethod
    def _payload_limits(cls, value: int, info: ValidationInfo) -> int:
        return within(value, value, MAX_MAX_CHARS, STORED.text_chars, info)


def read_file_precheck(args: ReadFileArgs) -> str | None:
    """Why this read can never succeed, from the path string alone (pure: see
    `ToolOptions.precheck`), or None."""
    return path_problem(args.path)


def read_text_file(
    workspace: Path, path: str, max_chars: int = DEFAULT_MAX_CHARS, most: int = MAX_MAX_CHARS
) -> str:
    """Read a text file inside `workspace` (blocking); `ToolError` for every expected failure.
    `most` is the largest `max_chars` the worker takes (what the truncation note offers)."""
    target = resolve_in_workspace(workspace, path)
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory, not a file")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        raise ToolError(f"{path!r} cannot be opened: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{path!r} is not a regular file")
        with os.fdopen(fd, "r", encoding="utf-8", errors="surrogateescape", newline="") as f:
            fd = -1  # now owned by the file object
            text = f.read(max_chars + 1)
    except OSError as exc:
        raise ToolError(f"{path!r} cannot be read: {exc.strerror or exc}") from None
    finally:
        if fd != -1:
            os.close(fd)

    if "\x00" in text:
        raise ToolError(
            f"{path!r} looks like a binary file (it contains NUL bytes); read_file only reads text"
        )
    notes: list[str] = []
    if len(text) > max_chars:
        text = text[:max_chars]
        notes.append(
            f"[truncated: showing the first {max_chars} characters; the file is "
            f"{info.st_size} bytes. Ask for a larger max_chars (up to {most}) "
            "to see more.]"
        )
    if _ESCAPED_BYTES.search(text):
        text = _ESCAPED_BYTES.sub("\ufffd", text)
        notes.append("[note: the file is not valid UTF-8; undecodable bytes are shown as \ufffd]")
    if not text and not notes:
        return f"[the file {path!r} is empty]"
    if notes:
        return text + "\n\n" + "\n".join(notes)
    return text


@tool(start_to_close_timeout=timedelta(seconds=10), precheck=read_file_precheck)
async def read_file(args: ReadFileArgs, ctx: ToolContext) -> str:
    """Read a UTF-8 text file from the workspace folder and return its contents.

    The path must be relative to the workspace (no absolute paths, no '..'). Long files are
    truncated to max_chars characters (default 20000) and a note says so.
    """
    most = limits(ctx.large_payloads).text_chars
    return await asyncio.to_thread(read_text_file, ctx.workspace, args.path, args.max_chars, most)
