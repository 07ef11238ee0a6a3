"""No function in workflow code (`durable_agents/workflows/`, `durable_agents/loop/`) is longer
than `MAX_LINES`: the workflow orchestrates in small, named steps, and the loop's decisions are
small pure functions (the developers' guide; issue 33's clean-up).

A function's length counts its lines from its `def` line to its last line, its docstring and
comments included, its decorators not (a nested function counts inside the one that holds it,
and on its own)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("durable_agents/workflows", "durable_agents/loop")
MAX_LINES = 45


def long_functions(source: str, limit: int = MAX_LINES) -> list[str]:
    """Each function of `source` longer than `limit` lines (`name (line): n lines`)."""
    return [
        f"{node.name} (line {node.lineno}): {length} lines"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > limit
    ]


def modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def test_the_count_runs_from_def_to_the_last_line() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(44))
    source = f'@decorated\ndef f():\n    """Doc."""\n{body}\n'
    assert long_functions(source) == ["f (line 2): 46 lines"]
    assert long_functions(source.replace("    x0 = 0\n", "")) == []
    inner = body.replace("    x", "        x")
    nested = f"class C:\n    async def g(self):\n        def h():\n            pass\n{inner}\n"
    assert long_functions(nested, limit=44) == ["g (line 2): 47 lines"]


def test_there_are_modules_to_measure() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in modules()}
    assert {
        "durable_agents/workflows/tool_round.py",
        "durable_agents/workflows/model_gateway.py",
        "durable_agents/loop/approvals.py",
    } <= names


@pytest.mark.parametrize("path", modules(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_no_workflow_function_is_over_45_lines(path: Path) -> None:
    assert long_functions(path.read_text()) == [], (
        f"{path.relative_to(ROOT)}: split these into well-named pieces (at most {MAX_LINES} "
        "lines from def to the last line)"
    )
