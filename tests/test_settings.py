"""The one settings class of the environment (`runtime.settings.EnvironmentSettings`) and
connecting to Temporal through `temporalio.envconfig`: a `temporal.toml` profile and the
standard variables reach the connect config (the environment overriding the file), secrets never
print, invalid values are named."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from pydantic import SecretStr
from temporalio.service import TLSConfig
from temporalio.testing import WorkflowEnvironment

from durable_agents.client.connection import Target
from durable_agents.runtime.codec import generate_key
from durable_agents.runtime.codec_server import server_from_env
from durable_agents.runtime.settings import EnvironmentSettings, SettingsError
from durable_agents.runtime.temporal_client import connect_with_settings, load_connection
from durable_agents.runtime.tracing import tracing_enabled

ROOT = Path(__file__).resolve().parent.parent
API_KEY = "tmprl-SECRET-api-key-" + uuid.uuid4().hex
FILE_API_KEY = "tmprl-SECRET-file-key-" + uuid.uuid4().hex
OPENAI_KEY = "sk-SECRET-openai-" + uuid.uuid4().hex
CODEC_TOKEN = "SECRET-codec-token-" + uuid.uuid4().hex
SECRETS = (API_KEY, FILE_API_KEY, OPENAI_KEY, CODEC_TOKEN)


def write_profiles(tmp_path: Path, cloud_address: str = "ns1.acct.tmprl.cloud:7233") -> Path:
    path = tmp_path / "temporal.toml"
    path.write_text(
        f"""
[profile.default]
address = "file-default.example:7233"
namespace = "from-file-default"

[profile.cloud]
address = "{cloud_address}"
namespace = "ns1.acct"
api_key = "{FILE_API_KEY}"

[profile.mtls]
address = "mtls.example:7233"
namespace = "secure"
[profile.mtls.tls]
server_name = "sni.example"
"""
    )
    return path


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


# -- the settings class ------------------------------------------------------------------------


def test_defaults_and_parsing_from_an_explicit_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TASK_QUEUE", "from-os-environ")
    defaults = EnvironmentSettings.from_env({})
    assert defaults.task_queue == "agents"  # os.environ is not read when a mapping is given
    assert EnvironmentSettings.from_env().task_queue == "from-os-environ"
    assert (defaults.temporal_address, defaults.temporal_namespace) == (None, None)
    assert (defaults.dev_server_port, defaults.dev_server_ui_port) == (7233, 8233)
    assert defaults.dev_server_db == Path(".temporal/dev.db")
    assert defaults.workspace == Path("workspace") and defaults.drain_seconds == 30
    assert defaults.payload_key is None and defaults.payload_key_id == "default"
    assert (defaults.log_level, defaults.log_format, defaults.otel_enabled) == (
        "INFO",
        "text",
        False,
    )
    assert defaults.uses_demo_model and defaults.tool_modules == []

    settings = EnvironmentSettings.from_env(
        {
            "TEMPORAL_ADDRESS": "  ",  # blank counts as unset
            "TASK_QUEUE": " q1 ",
            "AGENT_TOOL_MODULES": "pkg.a, pkg.b,",
            "TEMPORAL_DEV_PORT": "17233",
            "WORKER_DRAIN_SECONDS": "2.5",
            "OTEL_ENABLED": "yes",
            "LOG_LEVEL": "debug",
            "LOG_FORMAT": "JSON",
            "OPENAI_API_KEY": OPENAI_KEY,
        }
    )
    assert settings.temporal_address is None and settings.task_queue == "q1"
    assert settings.tool_modules == ["pkg.a", "pkg.b"]
    assert (settings.dev_server_port, settings.drain_seconds) == (17233, 2.5)
    assert (settings.log_level, settings.log_format) == ("DEBUG", "json")
    assert settings.otel_enabled and tracing_enabled({"OTEL_ENABLED": "1"})
    assert not tracing_enabled({"OTEL_ENABLED": "off"})
    assert not settings.uses_demo_model
    assert settings.openai_api_key is not None
    assert settings.openai_api_key.get_secret_value() == OPENAI_KEY


@pytest.mark.parametrize(
    ("value", "affinity"),
    [
        (None, "auto"),  # decided from what the worker and its runs observe
        ("auto", "auto"),
        ("on", "on"),
        ("true", "on"),
        ("OFF", "off"),
        ("false", "off"),
    ],
)
def test_cache_affinity_is_auto_unless_the_setting_overrides_it(
    value: str | None, affinity: str
) -> None:
    env = {} if value is None else {"AGENT_CACHE_AFFINITY": value}
    assert EnvironmentSettings.from_env(env).cache_affinity == affinity


def test_an_unknown_cache_affinity_is_refused() -> None:
    with pytest.raises(SettingsError, match="AGENT_CACHE_AFFINITY"):
        EnvironmentSettings.from_env({"AGENT_CACHE_AFFINITY": "sometimes"})


def test_invalid_values_are_named_and_never_echoed() -> None:
    with pytest.raises(SettingsError) as caught:
        EnvironmentSettings.from_env(
            {
                "TEMPORAL_DEV_PORT": "port-" + OPENAI_KEY,
                "LOG_FORMAT": "xml",
                "LOG_LEVEL": "loud",
                "OTEL_ENABLED": "maybe",
                "AGENT_PAYLOAD_KEY": CODEC_TOKEN,
                "AGENT_PAYLOAD_PREVIOUS_KEYS": API_KEY,
            }
        )
    message = str(caught.value)
    for name in (
        "TEMPORAL_DEV_PORT",
        "LOG_FORMAT",
        "LOG_LEVEL",
        "OTEL_ENABLED",
        "AGENT_PAYLOAD_KEY",
        "AGENT_PAYLOAD_PREVIOUS_KEYS",
    ):
        assert name in message
    assert "\n" not in message
    assert_no_secret(message)


def test_secrets_never_print(caplog: pytest.LogCaptureFixture) -> None:
    settings = EnvironmentSettings.from_env(
        {
            "TEMPORAL_API_KEY": API_KEY,
            "OPENAI_API_KEY": OPENAI_KEY,
            "AGENT_CODEC_TOKEN": CODEC_TOKEN,
            "AGENT_PAYLOAD_KEY": generate_key(),
        }
    )
    assert settings.temporal_api_key == SecretStr(API_KEY)
    assert settings.codec_token is not None
    assert settings.codec_token.get_secret_value() == CODEC_TOKEN
    key = settings.payload_key
    assert key is not None
    connection = load_connection(settings)
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("test").info("settings %s %r %s", settings, settings, connection)
        logging.getLogger("test").info("%s", settings.model_dump_json())
    for text in (repr(settings), str(settings), repr(connection), connection.describe()):
        assert_no_secret(text)
        assert key.get_secret_value() not in text
    assert_no_secret(caplog.text)
    assert key.get_secret_value() not in caplog.text
    assert "API key" in connection.describe() and "TLS" in connection.describe()


# -- envconfig: profiles and the standard variables --------------------------------------------


def test_profile_file_and_environment_reach_the_connect_config(tmp_path: Path) -> None:
    config_file = write_profiles(tmp_path)
    file_only = {"TEMPORAL_CONFIG_FILE": str(config_file)}

    default = load_connection(EnvironmentSettings.from_env(file_only))
    assert (default.address, default.namespace) == (
        "file-default.example:7233",
        "from-file-default",
    )
    assert default.api_key is None and default.tls is False

    cloud = load_connection(
        EnvironmentSettings.from_env({**file_only, "TEMPORAL_PROFILE": "cloud"})
    )
    assert (cloud.address, cloud.namespace) == ("ns1.acct.tmprl.cloud:7233", "ns1.acct")
    assert cloud.api_key == SecretStr(FILE_API_KEY)
    assert cloud.tls is True  # an API key turns TLS on, as envconfig defines

    # the environment overrides the file, variable by variable
    overridden = load_connection(
        EnvironmentSettings.from_env(
            {
                **file_only,
                "TEMPORAL_PROFILE": "cloud",
                "TEMPORAL_NAMESPACE": "ns2.acct",
                "TEMPORAL_API_KEY": API_KEY,
                "TEMPORAL_GRPC_META_X_TEAM": "agents",
            }
        )
    )
    assert overridden.address == "ns1.acct.tmprl.cloud:7233"  # from the file
    assert overridden.namespace == "ns2.acct"
    assert overridden.api_key == SecretStr(API_KEY)
    assert overridden.tls is True
    assert dict(overridden.rpc_metadata) == {"x-team": "agents"}
    plain = load_connection(
        EnvironmentSettings.from_env(
            {**file_only, "TEMPORAL_PROFILE": "cloud", "TEMPORAL_TLS": "false"}
        )
    )
    assert plain.tls is False and plain.api_key == SecretStr(FILE_API_KEY)
    moved = load_connection(
        EnvironmentSettings.from_env({**file_only, "TEMPORAL_ADDRESS": "other.example:7233"})
    )
    assert (moved.address, moved.namespace) == ("other.example:7233", "from-file-default")

    # TLS options of the file (and TEMPORAL_TLS_* variables) become a TLSConfig
    mtls = load_connection(EnvironmentSettings.from_env({**file_only, "TEMPORAL_PROFILE": "mtls"}))
    assert isinstance(mtls.tls, TLSConfig) and mtls.tls.domain == "sni.example"
    sni = load_connection(
        EnvironmentSettings.from_env(
            {"TEMPORAL_ADDRESS": "x.example:7233", "TEMPORAL_TLS_SERVER_NAME": "other-sni"}
        )
    )
    assert isinstance(sni.tls, TLSConfig) and sni.tls.domain == "other-sni"

    # keyword arguments of the settings class take part too
    given = load_connection(
        EnvironmentSettings(temporal_config_file=config_file, temporal_profile="cloud")
    )
    assert given.address == "ns1.acct.tmprl.cloud:7233"


def test_no_address_configured_leaves_the_choice_to_the_worker(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    connection = load_connection(EnvironmentSettings.from_env({"TEMPORAL_CONFIG_FILE": str(empty)}))
    assert connection.address is None  # the worker: localhost:7233 if it answers, else dev server
    assert connection.namespace == "default" and connection.tls is False
    target = Target.resolve(EnvironmentSettings.from_env({"TEMPORAL_CONFIG_FILE": str(empty)}))
    assert (target.address, target.namespace, target.task_queue) == (
        "localhost:7233",
        "default",
        "agents",
    )
    assert target.command_prefix() == "agent"


def test_cli_target_uses_the_profile_and_the_command_line(tmp_path: Path) -> None:
    env = {"TEMPORAL_CONFIG_FILE": str(write_profiles(tmp_path)), "TEMPORAL_PROFILE": "cloud"}
    target = Target.resolve(EnvironmentSettings.from_env(env))
    assert (target.address, target.namespace) == ("ns1.acct.tmprl.cloud:7233", "ns1.acct")
    assert target.connection.api_key == SecretStr(FILE_API_KEY)
    assert target.command_prefix() == "agent"  # another shell with this environment gets there
    moved = Target.resolve(EnvironmentSettings.from_env(env), "elsewhere:7233", "ns9", "q9")
    assert (moved.address, moved.namespace, moved.task_queue) == ("elsewhere:7233", "ns9", "q9")
    assert moved.connection.api_key == SecretStr(FILE_API_KEY)
    assert moved.command_prefix() == "agent --address elsewhere:7233 --namespace ns9"
    assert_no_secret(repr(target) + repr(moved))


def test_config_errors_name_the_variable_and_hide_the_key(tmp_path: Path) -> None:
    config_file = write_profiles(tmp_path)
    with pytest.raises(SettingsError, match="TEMPORAL_PROFILE: profile 'nope' not found"):
        load_connection(
            EnvironmentSettings.from_env(
                {"TEMPORAL_CONFIG_FILE": str(config_file), "TEMPORAL_PROFILE": "nope"}
            )
        )
    with pytest.raises(SettingsError, match="TEMPORAL_CONFIG_FILE: no such file"):
        load_connection(
            EnvironmentSettings.from_env({"TEMPORAL_CONFIG_FILE": str(tmp_path / "no")})
        )
    broken = tmp_path / "broken.toml"
    broken.write_text(f'[profile.default]\napi_key = "{FILE_API_KEY}\n')  # unterminated string
    with pytest.raises(SettingsError) as caught:
        load_connection(EnvironmentSettings.from_env({"TEMPORAL_CONFIG_FILE": str(broken)}))
    assert "TEMPORAL_CONFIG_FILE" in str(caught.value) and "line 2" in str(caught.value)
    assert_no_secret(str(caught.value))


# -- real connections --------------------------------------------------------------------------


async def test_connects_to_a_real_server_through_a_profile_without_logging_the_key(
    temporal_env: WorkflowEnvironment, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    address = temporal_env.client.service_client.config.target_host
    config_file = write_profiles(tmp_path, cloud_address=address)
    settings = EnvironmentSettings.from_env(
        {
            "TEMPORAL_CONFIG_FILE": str(config_file),
            "TEMPORAL_PROFILE": "cloud",
            "TEMPORAL_NAMESPACE": "default",  # the dev server has only this one
            "TEMPORAL_API_KEY": API_KEY,
            "TEMPORAL_TLS": "false",  # the dev server speaks plaintext; the key is still sent
        }
    )
    with caplog.at_level(logging.DEBUG):
        client = await connect_with_settings(settings)
        assert await client.service_client.check_health()
        handle = client.get_workflow_handle(f"no-such-run-{uuid.uuid4()}")
        with pytest.raises(Exception, match="not found"):
            await handle.describe()
    config = client.service_client.config
    assert (config.target_host, client.namespace) == (address, "default")
    assert config.api_key == API_KEY and config.tls is False
    assert "connecting to" in caplog.text and "API key" in caplog.text
    assert_no_secret(caplog.text)


async def test_agent_cli_reaches_the_server_of_the_profile(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    address = temporal_env.client.service_client.config.target_host
    config_file = write_profiles(tmp_path, cloud_address=address)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}
    env |= {
        "TEMPORAL_CONFIG_FILE": str(config_file),
        "TEMPORAL_PROFILE": "cloud",
        "TEMPORAL_NAMESPACE": "default",
        "TEMPORAL_TLS": "false",
    }
    workflow_id = f"no-such-run-{uuid.uuid4()}"

    async def agent(*args: str, **extra: str) -> tuple[int, str]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "durable_agents.cli.main",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=ROOT,
            env=env | extra,
        )
        out, err = await asyncio.wait_for(process.communicate(), timeout=60)
        assert process.returncode is not None
        return process.returncode, (out + err).decode()

    code, output = await agent("status", workflow_id)
    assert code == 4 and f"no run with workflow id '{workflow_id}'" in output, output
    assert_no_secret(output)
    code, output = await agent("status", workflow_id, TEMPORAL_PROFILE="nope")
    assert code == 4 and "TEMPORAL_PROFILE: profile 'nope' not found" in output, output
    assert "Traceback" not in output
    code, output = await agent("status", workflow_id, TEMPORAL_DEV_PORT="x" + OPENAI_KEY)
    assert code == 4 and "TEMPORAL_DEV_PORT" in output and "Traceback" not in output, output
    assert_no_secret(output)


def test_worker_and_codec_server_refuse_invalid_settings_in_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "LOG_"))}
    env |= {"LOG_FORMAT": "xml", "OPENAI_API_KEY": OPENAI_KEY, "AGENT_CODEC_TOKEN": CODEC_TOKEN}
    for command in (["worker.py"], ["-m", "durable_agents.runtime.codec_server", "--port", "0"]):
        done = subprocess.run(
            [sys.executable, *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode != 0, done
        assert "LOG_FORMAT" in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert_no_secret(done.stdout + done.stderr)
    env["LOG_FORMAT"] = "json"
    with server_from_env(port=0, env={"AGENT_PAYLOAD_KEY": generate_key(), **env}) as server:
        assert server.token == CODEC_TOKEN
        assert_no_secret(repr(server))


def test_the_address_pasted_commands_name_can_be_set() -> None:
    """AGENT_COMMAND_ADDRESS: compose's worker reaches `temporal:7233`, people on the host
    `localhost:7233` (issue 31, item 8); unset, the worker's own server is named."""
    from durable_agents.contracts.command_server import CommandServer
    from durable_agents.worker import command_server

    assert EnvironmentSettings.from_env({}).command_address is None
    assert command_server(EnvironmentSettings.from_env({}), "default") is None
    settings = EnvironmentSettings.from_env({"AGENT_COMMAND_ADDRESS": "localhost:7233"})
    assert command_server(settings, "prod") == CommandServer(
        address="localhost:7233", namespace="prod"
    )
