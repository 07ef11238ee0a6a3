"""What each install weighs (docs/install.md): the core, each extra, `[all]` and `[dev]`, each
installed into a fresh venv and measured with `du`.

    python -m scripts.docs.benchmarks record install-sizes --result /tmp/sizes.json -- \\
        .venv/bin/python -m scripts.docs.install_sizes --out /tmp/sizes.json

Each venv is `python -m venv` and `pip install -c constraints.txt SPEC` (the project's pins,
as `make run` installs) from a copy of the sources (pip builds in the source folder), then
`du -sm` of the venv and `pip list` of what it holds; the venv is removed before the next one.
Several minutes (the wheels come from the package index or pip's cache), so it is a recorded
run, rendered by `scripts/docs/benchmarks.py` (`install-sizes`), not a step of `make test`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = "durable_agents"
SOURCES = ("pyproject.toml", "README.md")
"""The files besides the package that `pip install .` needs."""


class Install(BaseModel):
    """One fresh venv with one install spec: its size and the distributions it holds."""

    spec: str
    """What was installed: `.`, `.[server]`, ..."""
    megabytes: int
    """`du -sm` of the venv (Python's own venv files and pip included)."""
    packages: list[str]
    """`pip list` names, lower-case, this project's own distribution left out."""


def source_copy(folder: Path) -> Path:
    """The files `pip install .` builds from, copied into `folder/source` (a build in the
    project's folder would leave build/ and *.egg-info there)."""
    source = folder / "source"
    source.mkdir()
    for name in SOURCES:
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / PACKAGE, source / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    return source


def extras() -> list[str]:
    """The extras `[all]` names, in pyproject.toml's order, then `all` and `dev`."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    [everything] = declared["all"]
    named = everything.split("[", 1)[1].rstrip("]").split(",")
    return [name for name in declared if name in named] + ["all", "dev"]


def measure(source: Path, folder: Path, extra: str | None) -> Install:
    """A fresh venv in `folder` with the core install (`extra` None) or `.[extra]`."""
    spec = "." if extra is None else f".[{extra}]"
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "-c", ROOT / "constraints.txt",
         f"{source}{spec.removeprefix('.')}"],
        check=True,
    )  # fmt: skip
    size = subprocess.run(["du", "-sm", venv], capture_output=True, text=True, check=True)
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True
    )
    names = sorted(p["name"].lower() for p in json.loads(listed.stdout))
    shutil.rmtree(venv)
    return Install(
        spec=spec,
        megabytes=int(size.stdout.split()[0]),
        packages=[name for name in names if name != "durable-agents"],
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.docs.install_sizes", description=__doc__
    )
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    parser.add_argument("--only", nargs="*", help="these extras only (the core is always measured)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="install-sizes-") as tmp:
        folder = Path(tmp)
        source = source_copy(folder)
        installs = [measure(source, folder, None)]
        print(f"core: {installs[0].megabytes} MB", flush=True)
        for extra in args.only or extras():
            installs.append(measure(source, folder, extra))
            print(f"[{extra}]: {installs[-1].megabytes} MB", flush=True)
    result = {"installs": [install.model_dump() for install in installs]}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
