"""The ids a client may name a run or a session by, over HTTP, MCP or A2A.

A workflow id is shown back everywhere: in the console, the Web UI, pasted commands, logs. An id
with a NUL, a right-to-left override or a line break shows something other than what it is, and
one that looks like a path (`../../etc/passwd`) invites someone to use it as one. So an id from
outside holds only letters, digits and `-_.:/@` (`/` joins a session and its child turns:
`chat-1/turn-3`), at most `MAX_ID_CHARS` characters, with no empty, `.` or `..` part between
slashes. Anything else is refused naming the problem, before anything reaches Temporal.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, WithJsonSchema

MAX_ID_CHARS = 200
ID_CHARS = "letters, digits and -_.:/@"
ID_PATTERN = r"^[A-Za-z0-9_.:@/-]{1,200}$"
"""The characters and length as a JSON Schema `pattern` (for the OpenAPI schema; the slashes
rule is checked by `id_problem`)."""
UNSAFE_CHAR = re.compile(r"[^A-Za-z0-9_.:@/-]")


def id_problem(value: str) -> str | None:
    """What is wrong with `value` as a run or session id, or None when it is a safe one."""
    if not value:
        return "an id cannot be empty"
    if len(value) > MAX_ID_CHARS:
        return f"an id has at most {MAX_ID_CHARS} characters (this one has {len(value)})"
    bad = UNSAFE_CHAR.search(value)
    if bad is not None:
        char = bad.group()
        return (
            f"an id holds only {ID_CHARS}; {char!r} (U+{ord(char):04X}) at position "
            f"{bad.start()} is not allowed"
        )
    if any(part in ("", ".", "..") for part in value.split("/")):
        return "an id has no empty, '.' or '..' part between slashes (nor a '/' at either end)"
    return None


def checked_id(value: str) -> str:
    """`value` if it is a safe id; else `ValueError` saying why (a pydantic validator)."""
    problem = id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


SafeId = Annotated[
    str,
    AfterValidator(checked_id),
    WithJsonSchema({"type": "string", "pattern": ID_PATTERN, "maxLength": MAX_ID_CHARS}),
]
"""A run or session id from outside (see the module docstring)."""
