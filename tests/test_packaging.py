"""Packaging: building the project prints no setuptools warning about the web console's files,
and those files still ship (issue 31, item 14: `make run`'s `pip install --quiet -e .` printed
a wall of "Package 'durable_agents.servers.http_api.static' is absent from the packages
configuration").

The build runs setuptools' `build_py` from this venv on a copy of the packaged sources, with the
`__pycache__` directories a working tree has: under a second, no network (pip's isolated build
would fetch setuptools from the index). setuptools 65 words the warning "Installing
'durable_agents.servers.http_api.static' as data is deprecated"; later ones "is absent from the
packages configuration"; both are a `SetuptoolsDeprecationWarning` naming the directory.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "durable_agents"
STATIC = Path("durable_agents/servers/http_api/static")


def test_the_build_warns_of_nothing_and_ships_the_console(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "worker.py"):
        shutil.copy2(ROOT / name, source / name)
    for folder in (PACKAGE, "workflows", "activities"):  # the last two: the application's own
        if (ROOT / folder).is_dir():
            shutil.copytree(ROOT / folder, source / folder)
    (source / PACKAGE / "cli" / "__pycache__").mkdir(exist_ok=True)  # as a tree that has run has
    built = tmp_path / "built"

    done = subprocess.run(
        [sys.executable, "-c", "from setuptools import setup; setup()", "-q",
         "build_py", "--build-lib", str(built)],
        cwd=source, capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "SetuptoolsDeprecationWarning" not in output, output
    assert "durable_agents.servers.http_api.static" not in output, output
    shipped = sorted(p.name for p in (built / STATIC).iterdir())
    assert shipped == sorted(p.name for p in (ROOT / STATIC).iterdir() if p.is_file())
    assert {"index.html", "console.js", "console.css"} <= set(shipped)
    assert not list(built.rglob("__pycache__")), "bytecode caches are not packages"
    modules = {p.relative_to(built) for p in built.rglob("*.py")}
    expected = {
        p.relative_to(ROOT) for p in (ROOT / PACKAGE).rglob("*.py") if "__pycache__" not in p.parts
    }
    assert modules == expected
    # One top-level import package (issue 33): the application's worker.py, workflows/ and
    # activities/ stay in the repository.
    assert {p.name for p in built.iterdir()} == {PACKAGE}


def test_the_package_imports_its_public_names_only_on_use() -> None:
    """The workflow sandbox imports `durable_agents/__init__.py` with every workflow module;
    the worker's and client's modules (httpx, the openai client) must not come with it, or a
    plain `Replayer` fails with RestrictedWorkflowAccessError."""
    code = (
        "import sys, durable_agents.workflows.agent_workflow, durable_agents as d\n"
        "assert 'durable_agents.plugin' not in sys.modules, 'plugin'\n"
        "assert 'durable_agents.runtime.workers' not in sys.modules, 'workers'\n"
        "assert d.DurableAgentsPlugin.__name__ == 'DurableAgentsPlugin'\n"
        "assert 'durable_agents.plugin' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
