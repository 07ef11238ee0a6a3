"""Every module that runs in workflow code (`workflows/`, `loop/`, `contracts/`, and the
tool definitions and catalog) keeps to what replay allows: no clock, randomness, environment,
file, network, process or thread access except through `temporalio.workflow`.

The worker's sandbox cannot check this: it passes this project's packages through (one copy
shared by every run, `WorkerTuning.sandbox`), and a passed-through module uses the real
`datetime`, `random` and `os`. So this scan reads each module's source and names what it
found; the replay tests (`tests/test_replay_histories.py`) check the behaviour."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("workflows", "loop", "contracts")
MODULES = ("tools/definition.py", "tools/catalog.py")
"""The tools modules the workflows use (a tool's definition and the catalog; the tools
themselves run in activities)."""

FORBIDDEN_MODULES = frozenset(
    {
        "os",
        "time",
        "random",
        "secrets",
        "socket",
        "subprocess",
        "threading",
        "multiprocessing",
        "concurrent",
        "urllib",
        "http",
        "httpx",
        "requests",
        "openai",
        "tempfile",
        "shutil",
        "sqlite3",
        "psycopg",
    }
)
"""Imported by workflow code, each of these reads the world or changes it."""
FORBIDDEN_CALLS = frozenset({"open", "input", "breakpoint", "exec", "eval", "__import__"})
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        ("datetime", "now"),
        ("datetime", "utcnow"),
        ("datetime", "today"),
        ("date", "today"),
        ("uuid", "uuid1"),
        ("uuid", "uuid4"),
        ("asyncio", "sleep"),
        ("asyncio", "to_thread"),
        ("asyncio", "get_event_loop"),
        ("asyncio", "new_event_loop"),
    }
)
"""`workflow.now()`, `workflow.uuid4()`, `workflow.sleep()` are the deterministic ones."""


def workflow_modules() -> list[Path]:
    found = [path for package in PACKAGES for path in (ROOT / package).rglob("*.py")]
    return sorted([*found, *(ROOT / module for module in MODULES)])


def findings(source: str) -> list[str]:
    """What in `source` workflow code must not do, one line each (`line: what`)."""
    nodes = ast.walk(ast.parse(source))
    found = [(getattr(node, "lineno", 0), what) for node in nodes for what in forbidden(node)]
    return [f"{line}: {what}" for line, what in sorted(found)]


def forbidden(node: ast.AST) -> list[str]:
    """What `node` does that workflow code must not."""
    if isinstance(node, ast.Import):
        return [f"import {a.name}" for a in node.names if a.name.split(".")[0] in FORBIDDEN_MODULES]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        banned = node.module.split(".")[0] in FORBIDDEN_MODULES
        return [f"from {node.module} import ..."] if banned else []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return [f"{node.func.id}(...)"] if node.func.id in FORBIDDEN_CALLS else []
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        pair = (node.value.id, node.attr)
        return [f"{pair[0]}.{pair[1]}"] if pair in FORBIDDEN_ATTRIBUTES else []
    return []


def test_the_scan_finds_what_it_looks_for() -> None:
    source = "\n".join(
        [
            "import os",
            "from time import monotonic",
            "from datetime import datetime",
            "x = datetime.now()",
            "y = open('f')",
            "import asyncio",
            "asyncio.sleep(1)",
            "from temporalio import workflow",
            "z = workflow.now()",
            "import uuid",
            "uuid.uuid4()",
        ]
    )
    assert findings(source) == [
        "1: import os",
        "2: from time import ...",
        "4: datetime.now",
        "5: open(...)",
        "7: asyncio.sleep",
        "11: uuid.uuid4",
    ]


def test_there_are_modules_to_scan() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in workflow_modules()}
    assert {"workflows/agent_workflow.py", "loop/model_reply.py", "contracts/events.py"} <= names


@pytest.mark.parametrize(
    "path", workflow_modules(), ids=lambda path: path.relative_to(ROOT).as_posix()
)
def test_workflow_code_reads_no_clock_randomness_or_world(path: Path) -> None:
    assert findings(path.read_text()) == [], (
        f"{path.relative_to(ROOT)} runs in workflow code: use temporalio.workflow's now(), "
        "uuid4(), random(), sleep(), or do it in an activity"
    )
