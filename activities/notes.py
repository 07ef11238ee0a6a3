"""The notes tools: a notebook kept in one folder, one text file a note.

They get the notebook as their dependency (`ctx.deps`), which the worker builds once
(`worker.py`), so a test can hand them another folder and nothing about it enters the history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from durable_agents import ToolContext, ToolError

TITLE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _-]{0,63}$")


@dataclass(frozen=True)
class Notebook:
    """Where the notes live: one `<title>.txt` a note in `folder`."""

    folder: Path

    def path_of(self, title: str) -> Path:
        """The file of a note; a title that is not a plain name is the model's to fix."""
        if not TITLE.match(title):
            raise ToolError(f"a note title is 1-64 letters, digits, spaces, _ or -: {title!r}")
        return self.folder / f"{title.strip()}.txt"


async def write_note(ctx: ToolContext[Notebook], title: str, text: str) -> str:
    """Write a note (replacing one with the same title).

    Args:
        title: A short title, such as "groceries".
        text: The whole note.
    """
    path = ctx.deps.path_of(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return f"saved note {title!r} ({len(text)} characters)"


async def read_notes(ctx: ToolContext[Notebook]) -> str:
    """Every note, each under its title."""
    notes = sorted(ctx.deps.folder.glob("*.txt"))
    if not notes:
        return "there are no notes yet"
    return "\n\n".join(f"# {p.stem}\n{p.read_text(encoding='utf-8')}" for p in notes)


async def delete_note(ctx: ToolContext[Notebook], title: str) -> str:
    """Delete a note.

    Args:
        title: The note's title.
    """
    path = ctx.deps.path_of(title)
    if not path.exists():
        raise ToolError(f"there is no note {title!r}")
    path.unlink()
    return f"deleted note {title!r}"
