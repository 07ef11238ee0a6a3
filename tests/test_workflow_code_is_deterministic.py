"""Every module that runs in workflow code (`workflows/`, `loop/`, `contracts/`, and the
tool definitions and catalog) keeps to what replay allows: no clock, randomness, environment,
file, network, process or thread access except through `temporalio.workflow`.

The worker's sandbox cannot check this: it passes this project's packages through (one copy
shared by every run, `WorkerTuning.sandbox`), and a passed-through module uses the real
`datetime`, `random` and `os`. So this scan reads each module's source and names what it
found; the replay tests (`tests/test_replay_histories.py`) check the behaviour.

It also flags a `workflow.patched` call made under a condition that reads the worker's
configuration (its catalog, its settings): replay must follow the history, never the worker
(issue 39; `patches_under_configuration`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("durable_agents/workflows", "durable_agents/loop", "durable_agents/contracts")
MODULES = ("durable_agents/tools/definition.py", "durable_agents/tools/catalog.py")
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
    assert {
        "durable_agents/workflows/agent_workflow.py",
        "durable_agents/loop/model_reply.py",
        "durable_agents/contracts/events.py",
    } <= names


@pytest.mark.parametrize(
    "path", workflow_modules(), ids=lambda path: path.relative_to(ROOT).as_posix()
)
def test_workflow_code_reads_no_clock_randomness_or_world(path: Path) -> None:
    assert findings(path.read_text()) == [], (
        f"{path.relative_to(ROOT)} runs in workflow code: use temporalio.workflow's now(), "
        "uuid4(), random(), sleep(), or do it in an activity"
    )


# -- patches asked under the worker's configuration ----------------------------------------------

CONFIGURATION = frozenset(
    {"worker_catalog", "settings", "EnvironmentSettings", "CATALOG", "catalog"}
)
"""What reads the worker's configuration in workflow code: its catalog (`worker_catalog()`, the
application's `CATALOG`, a `catalog` taken from either) and its settings."""
EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def patches_under_configuration(source: str) -> list[str]:
    """Each `workflow.patched(...)` call made under a condition that reads the worker's
    configuration (`line: patched(...) under <condition>`).

    Such a call is asked, or not, depending on the worker that replays the run, not on the
    history: a marker recorded where it was asked meets no command where it is not (a
    nondeterminism error), and a run that did not record it may record it on another worker.
    Ask `patched` unconditionally and let the worker's `patch_activation_callback` answer a new
    run (runtime/workers.py). A condition is an enclosing `if`/`while`/conditional
    expression's test, an earlier operand of `and`/`or`, or the test of an earlier `if` in an
    enclosing block that returns, raises, breaks or continues; a name bound from the
    configuration in the same function counts as reading it."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call) or not is_patched_call(call):
            continue
        conditions = conditions_of(call, parents)
        tainted = configured_names(enclosing_function(call, parents))
        for condition in conditions:
            if reads_configuration(condition, tainted):
                found.append(f"{call.lineno}: patched(...) under {ast.unparse(condition)}")
                break
    return found


def is_patched_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "patched") or (
        isinstance(func, ast.Name) and func.id == "patched"
    )


def conditions_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> list[ast.expr]:
    """The conditions under which `node` runs, within its function (see
    `patches_under_configuration`)."""
    conditions: list[ast.expr] = []
    child, parent = node, parents.get(node)
    while parent is not None and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
        if isinstance(parent, ast.BoolOp):
            conditions.extend(parent.values[: [*map(id, parent.values)].index(id(child))])
        elif isinstance(parent, ast.IfExp | ast.If | ast.While) and child is not parent.test:
            conditions.append(parent.test)
        for block in ("body", "orelse", "finalbody"):
            statements = getattr(parent, block, None)
            if isinstance(statements, list) and child in statements:
                conditions.extend(early_exit_tests(statements[: statements.index(child)]))
        child, parent = parent, parents.get(parent)
    return conditions


def early_exit_tests(before: list[ast.stmt]) -> list[ast.expr]:
    """The tests of the `if`s among `before` whose body leaves the block."""
    return [s.test for s in before if isinstance(s, ast.If) and isinstance(s.body[-1], EXITS)]


def enclosing_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
    return None


def configured_names(function: ast.AST | None) -> set[str]:
    """The names `function` binds from the worker's configuration."""
    if function is None:
        return set()
    return {
        target.id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign) and reads_configuration(node.value, set())
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def reads_configuration(expression: ast.AST, tainted: set[str]) -> bool:
    for node in ast.walk(expression):
        if isinstance(node, ast.Name) and (node.id in CONFIGURATION or node.id in tainted):
            return True
        if isinstance(node, ast.Attribute) and node.attr in CONFIGURATION:
            return True
    return False


OLD_SEARCH_ATTRIBUTES = """
class SearchAttributeKeeper:
    def _on(self) -> bool:
        if self._enabled is None:
            self._enabled = worker_catalog().search_attributes and workflow.patched(
                SEARCH_ATTRIBUTES_PATCH
            )
        return self._enabled
"""
"""`SearchAttributeKeeper._on` as it was before issue 39: whether the patch was asked at all
depended on the worker's catalog, so a run recorded with the marker failed to replay on a plain
`Replayer` (a nondeterminism error)."""
OLD_RAISED_LIMITS = """
def raised_limits() -> bool:
    return worker_catalog().large_payloads and workflow.patched(LARGE_PAYLOADS_PATCH)
"""


def test_the_scan_flags_a_patch_asked_under_the_worker_configuration() -> None:
    assert patches_under_configuration(OLD_SEARCH_ATTRIBUTES) == [
        "5: patched(...) under worker_catalog().search_attributes"
    ]
    assert patches_under_configuration(OLD_RAISED_LIMITS) == [
        "3: patched(...) under worker_catalog().large_payloads"
    ]
    guarded = "\n".join(
        [
            "def f(self):",
            "    catalog = worker_catalog()",
            "    if not catalog.search_attributes:",
            "        return False",
            "    return workflow.patched('p')",
            "def g(settings):",
            "    return workflow.patched('q') if settings.flag else False",
            "def h(self):",
            "    if self.settings.flag:",
            "        self.on = workflow.patched('r')",
        ]
    )
    assert patches_under_configuration(guarded) == [
        "5: patched(...) under not catalog.search_attributes",
        "7: patched(...) under settings.flag",
        "10: patched(...) under self.settings.flag",
    ]


def test_the_scan_leaves_patches_asked_under_the_run_state() -> None:
    source = "\n".join(
        [
            "def f(self, params, reason):",
            "    if reason is None or not workflow.patched('a'):",
            "        return",
            "    if params.turns == 'inline' and workflow.patched('b'):",
            "        pass",
            "    self.on = workflow.patched('c')",
        ]
    )
    assert patches_under_configuration(source) == []


@pytest.mark.parametrize(
    "path", workflow_modules(), ids=lambda path: path.relative_to(ROOT).as_posix()
)
def test_no_patch_is_asked_under_the_worker_configuration(path: Path) -> None:
    assert patches_under_configuration(path.read_text()) == [], (
        f"{path.relative_to(ROOT)}: ask workflow.patched whatever the worker's configuration "
        "and let its patch_activation_callback answer new runs (runtime/workers.py)"
    )
