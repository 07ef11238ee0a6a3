"""The documentation a newcomer follows (issue 34): a short README in the issue's order, a site
that builds with `mkdocs build --strict`, and reference pages generated from the code that
cover every setting, CLI flag, workflow handler, input field and event type.

The reference pages are written by `scripts/docs/reference.py` when the site is built, never
committed, so they cannot be stale; these tests fail when the generator leaves something out
(a new field, flag, handler or event it does not show) or when the code lacks the docstring or
description a page would show."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

from scripts.docs import reference

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_SECTIONS = [
    "The loop",
    "Quick start",
    "Your first run, an approval, and the Web UI",
    "Defining an agent with its own tool in Python",
    "Pointing it at a real model",
    "Documentation",
]
"""Issue 34's order: what it is (the paragraph under the title), the picture of the loop, the
quick start, the first run with an approval and the Web UI, an agent in Python, a real model,
links into the site."""


def section(page: str, heading: str) -> str:
    """The text of `page` from the heading `heading` to the next heading of its level."""
    level = heading.split(" ", 1)[0]
    start = page.index(heading + "\n")
    rest = page[start + len(heading) :]
    following = re.search(rf"^{level} ", rest, flags=re.MULTILINE)
    return rest[: following.start()] if following else rest


def test_readme_is_short_and_in_the_issues_order() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings == README_SECTIONS
    intro = text.split("\n## ", 1)[0]
    assert "Temporal workflow" in intro and "activity" in intro
    assert "make run" in section(text, "## Quick start")
    assert "make test" in section(text, "## Quick start")
    first_run = section(text, "## Your first run, an approval, and the Web UI")
    assert "<!-- generated: temporal-approval -->" in first_run
    assert "localhost:8233" in first_run


def test_readme_shows_the_library_contract_under_its_marker() -> None:
    lines = README.read_text().splitlines()
    marker = lines.index("<!-- sample: library-contract -->")
    assert lines[marker + 1] == "```python"
    assert "from durable_agents import Agent, AgentClient" in "\n".join(lines[marker:])


def test_settings_page_shows_every_variable_with_its_meaning() -> None:
    page = reference.settings_page()
    fields = reference.settings_fields()
    assert len(fields) > 30
    for variable, field in fields:
        assert field.description, f"{variable}: the field has no docstring to show"
        row = next(line for line in page.splitlines() if line.startswith(f"| `{variable}` |"))
        assert reference.cell(field.description) in row


def test_cli_page_shows_every_command_and_flag() -> None:
    page = reference.cli_page()
    commands = reference.cli_commands()
    assert {"run", "approve", "serve", "replay"} <= commands.keys()
    for flag in commands.pop(""):
        assert f"`{flag}`" in section(page, "## Options of every command")
    for command, arguments in commands.items():
        shown = section(page, f"## agent {command}")
        for argument in arguments:
            assert f"`{argument}`" in shown, f"agent {command}: {argument} is not shown"


def test_contract_page_shows_every_handler_with_its_payload() -> None:
    page = reference.contract_page()
    for workflow_type, contract in reference.workflow_contracts().items():
        shown = section(page, f"## {workflow_type}")
        found = list(reference.handlers(contract["class"]))
        assert {"approve", "decide", "status", "pending_approvals"} <= {n for _, n, _ in found}
        for kind, name, fn in found:
            assert f"### {kind} `{name}`" in shown
            assert inspect.getdoc(fn), f"{workflow_type} {kind} {name} has no docstring"
            if kind != "query":
                assert name in contract["payloads"], f"{workflow_type}: no model for {name}"
        for model in (contract["input"], contract["result"]):
            for name, _, _, description in reference.schema_fields(model):
                assert f"| `{name}` |" in shown, f"{model.__name__}.{name} is not shown"
                if model is contract["input"]:
                    assert description, f"{model.__name__}.{name} has no description"


def test_events_page_shows_every_event_type_and_field() -> None:
    page = reference.events_page()
    models = reference.event_models()
    assert len(models) >= 20
    for model in models:
        shown = section(page, f"## {reference.event_type(model)}")
        for name in model.model_json_schema()["properties"]:
            assert f"| `{name}` |" in shown, f"{model.__name__}.{name} is not shown"


def test_every_public_name_imports_and_says_what_it_is() -> None:
    names = reference.public_names()
    assert "Agent" in dict(names["durable_agents"])
    assert reference.unresolved_names() == []
    page = reference.python_api_page()
    for module, members in names.items():
        for name, obj in members:
            assert inspect.getdoc(obj), f"{module}.{name} has no docstring"
            assert f".{name}\n" in page


def test_the_site_builds_strict_with_the_generated_pages(tmp_path: Path) -> None:
    """`mkdocs build --strict` (as `make docs` and `.ci/run` run it): a broken link, an anchor
    that is gone or a page outside the nav fails the build."""
    built = subprocess.run(
        [str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "-d", str(tmp_path)],
        cwd=ROOT,
        env=os.environ | {"DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    settings = (tmp_path / "reference" / "settings" / "index.html").read_text()
    assert "AGENT_PAYLOAD_STORE" in settings
    api = (tmp_path / "reference" / "python-api" / "index.html").read_text()
    assert "DurableAgentsPlugin" in api
    assert (
        "Order 17 shirts"
        in (tmp_path / "getting-started" / "first-agent" / "index.html").read_text()
    )


def test_examples_page_lists_every_example_folder_and_each_has_its_test() -> None:
    page = reference.examples_page()
    folders = reference.example_folders()
    assert {f.name for f in folders} >= {"shop", "session_chat", "sub_agent", "mcp_server"}
    for folder in folders:
        assert f"`examples/{folder.name}/`" in page
        tested = list(folder.glob("test_*.py")) or list(
            (ROOT / "tests").glob(f"test_{folder.name}*example*.py")
        )
        assert tested, f"examples/{folder.name} has no test for make test to run"


def test_the_development_install_the_docs_describe_is_the_makefiles() -> None:
    """Getting started shows the command `make` installs `.venv` with (pinned by
    constraints.txt), and how to put `.venv/bin` on the PATH the pages' commands assume."""
    makefile = (ROOT / "Makefile").read_text()
    [install] = [
        line.strip() for line in makefile.splitlines() if "pip install" in line and "-e '." in line
    ]
    assert "-c constraints.txt" in install
    shown = install.replace("$(BIN)/", ".venv/bin/").replace(" --quiet", "")
    page = (ROOT / "docs" / "getting-started" / "install.md").read_text()
    assert shown in page, f"docs/getting-started/install.md does not show: {shown}"
    assert (ROOT / "constraints.txt").exists()
    path_setup = 'export PATH="$PWD/.venv/bin:$PATH"'
    assert path_setup in page
    assert path_setup in (ROOT / "README.md").read_text()
