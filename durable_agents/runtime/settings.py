"""The configuration of every process of the project (worker, `agent` CLI, codec server), read
once from the environment by one `pydantic-settings` class.

`EnvironmentSettings.from_env()` reads `os.environ`; `EnvironmentSettings.from_env({...})` reads
only the mapping it is given (tests). Blank values count as unset. Invalid values fail at once
with a `SettingsError` that names the variable and never echoes its value; secrets are
`SecretStr`, so they print as `**********` in `repr`, `str` and logs.

How the worker and the CLI reach Temporal (address, namespace, API key, TLS, profiles in a
`temporal.toml`) is resolved by `temporalio.envconfig`, as the `temporal` CLI does: see
`runtime/temporal_client.py`. The `TEMPORAL_*` fields below are the ones this project names;
every other standard variable (`TEMPORAL_TLS_CLIENT_CERT_PATH`, `TEMPORAL_GRPC_META_*`, ...)
is passed through to `envconfig` unchanged.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings.sources.utils import parse_env_vars

from durable_agents.activities.cache_affinity import CacheAffinity
from durable_agents.runtime.decision_key import (
    DECISION_KEY_ENV,
    DECISION_KEY_FILE_ENV,
    MIN_KEY_CHARS,
)
from durable_agents.runtime.payload_keys import (
    DEFAULT_KEY_ID,
    PAYLOAD_KEY_ENV,
    PAYLOAD_KEY_ID_ENV,
    PREVIOUS_KEYS_ENV,
    parse_key,
    parse_keyring,
)
from durable_agents.runtime.providers import ProvidersError, ProviderSettings, parse_providers

DEFAULT_TASK_QUEUE = "agents"
DEFAULT_NAMESPACE = "default"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
AFFINITY_WORDS = {w: "on" for w in ("true", "1", "yes")} | {w: "off" for w in ("false", "0", "no")}
"""How `AGENT_CACHE_AFFINITY` may also say on and off."""
TEMPORAL_ENV_PREFIX = "TEMPORAL_"

_SOURCE: ContextVar[Mapping[str, str] | None] = ContextVar("agent_settings_source", default=None)


class SettingsError(ValueError):
    """The environment holds an invalid value; the message names each variable, never a value."""


class _MappingEnvSource(EnvSettingsSource):
    """The environment source, reading a given mapping instead of `os.environ`."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(
            self._environ, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str
        )


@contextmanager
def _reading(environ: Mapping[str, str]) -> Iterator[None]:
    token = _SOURCE.set(environ)
    try:
        yield
    finally:
        _SOURCE.reset(token)


def _env(name: str, **kwargs: Any) -> Any:
    """A field read from the environment variable `name` (also settable by field name)."""
    return Field(validation_alias=name, **kwargs)


class EnvironmentSettings(BaseSettings):
    """Everything the worker, the `agent` CLI and the codec server read from the environment
    (not to be confused with `contracts.agent_input.AgentSettings`: how one run runs, in its
    input).

    Each field is read from the environment variable named by its alias; its docstring says what
    it does. The settings reference of the documentation site (docs/reference/settings.md) is
    generated from these fields, so it always matches them.
    """

    model_config = SettingsConfigDict(
        frozen=True,
        extra="ignore",
        populate_by_name=True,
        case_sensitive=True,
        env_ignore_empty=True,
        hide_input_in_errors=True,
        use_attribute_docstrings=True,
    )

    # -- reaching Temporal (resolved with temporalio.envconfig, see runtime/temporal_client.py)
    temporal_address: str | None = _env("TEMPORAL_ADDRESS", default=None)
    """The Temporal server. Unset: the profile's address, else `localhost:7233` if a server
    answers there, else an embedded dev server (the worker only)."""
    temporal_namespace: str | None = _env("TEMPORAL_NAMESPACE", default=None)
    """The Temporal namespace. Unset: the profile's, else `default`."""
    temporal_api_key: SecretStr | None = _env("TEMPORAL_API_KEY", default=None)
    """An API key (Temporal Cloud); it turns TLS on. Never logged or printed."""
    temporal_tls: bool | None = _env("TEMPORAL_TLS", default=None)
    """`true`/`false`: force TLS on or off. The other `TEMPORAL_TLS_*` variables (client
    certificate and key, CA, server name) pass through to `temporalio.envconfig` as the
    `temporal` CLI reads them."""
    temporal_profile: str | None = _env("TEMPORAL_PROFILE", default=None)
    """The profile of the `temporal.toml` to use (unset: `default`)."""
    temporal_config_file: Path | None = _env("TEMPORAL_CONFIG_FILE", default=None)
    """A `temporal.toml` to read profiles from; unset: the `temporal` CLI's own file."""
    task_queue: str = _env("TASK_QUEUE", default=DEFAULT_TASK_QUEUE, min_length=1)
    """The task queue of the workflows and activities."""
    # -- the model
    openai_api_key: SecretStr | None = _env("OPENAI_API_KEY", default=None)
    """The key of the OpenAI-compatible model server. Unset: the built-in offline demo model."""
    openai_base_url: str | None = _env("OPENAI_BASE_URL", default=None)
    """The model server's endpoint, e.g. `http://localhost:11434/v1` for Ollama. Unset:
    OpenAI."""
    model: str | None = _env("MODEL", default=None)
    """The default model name. Unset: `gpt-4o-mini` (`demo-offline` without a key)."""
    model_streaming: bool = _env("MODEL_STREAMING", default=True)
    """`false`: never stream replies from the model server (the live tokens of `agent run` and
    the event stream then come whole)."""
    model_tool_calling: Literal["native", "prompted"] = _env("MODEL_TOOL_CALLING", default="native")
    """`prompted`: describe the tools in the prompt and read the calls from the reply's text,
    for a server without native tool calling."""
    model_providers: SecretStr | None = _env("MODEL_PROVIDERS", default=None)
    """JSON: the providers runs name as `provider/model`, each with its endpoint and key
    (`runtime/providers.py`)."""
    model_providers_file: Path | None = _env("MODEL_PROVIDERS_FILE", default=None)
    """The same JSON as `MODEL_PROVIDERS`, in a file."""
    # -- the worker
    workspace: Path = _env("AGENT_WORKSPACE", default=Path("workspace"))
    """The folder the file tools (`read_file`, `write_file`) are confined to."""
    dev_server_port: int = _env("TEMPORAL_DEV_PORT", default=7233, gt=0, lt=65536)
    """The port of the embedded dev server the worker starts when no server is configured."""
    dev_server_ui_port: int = _env("TEMPORAL_DEV_UI_PORT", default=8233, gt=0, lt=65536)
    """The Web UI port of the embedded dev server."""
    dev_server_db: Path = _env("TEMPORAL_DEV_DB", default=Path(".temporal/dev.db"))
    """The embedded dev server's SQLite file (runs survive restarts)."""
    command_address: str | None = _env("AGENT_COMMAND_ADDRESS", default=None, min_length=1)
    """The address the commands runs hand out to be pasted name, where people reach the server
    another way than the worker does (compose: the worker's `temporal:7233` is the host's
    `localhost:7233`); unset: the worker's own (`loop.pasted_commands`)."""
    drain_seconds: float = _env("WORKER_DRAIN_SECONDS", default=30.0, ge=0)
    """On Ctrl-C or SIGTERM, the time in-flight activities get to finish before the worker
    stops."""
    tool_modules: Annotated[list[str], NoDecode] = _env("AGENT_TOOL_MODULES", default=[])
    """Comma-separated modules the worker imports before it polls; each registers more tools
    (`examples/unit_tools.py`)."""
    # -- long-term memory (tools/memory_store): PostgreSQL when the URL is set, else SQLite
    memory_database_url: SecretStr | None = _env("MEMORY_DATABASE_URL", default=None)
    """`postgresql://...`: keep long-term memory in PostgreSQL (workers on several machines).
    Unset: SQLite."""
    memory_database_path: Path = _env("MEMORY_DATABASE_PATH", default=Path(".data/memory.db"))
    """The SQLite file of long-term memory, when no `MEMORY_DATABASE_URL` is set."""
    allow_run_auto_approve: bool = _env("ALLOW_RUN_AUTO_APPROVE", default=False)
    """Lets a run's approval policy `auto`-run a tool whose definition requires approval."""
    mcp_config: Path | None = _env("MCP_CONFIG", default=None)
    """A JSON file of MCP tool servers, in the format Claude Desktop and Cursor use."""
    cache_affinity: CacheAffinity = _env("AGENT_CACHE_AFFINITY", default="auto")
    """Send a run's model calls to the worker that caches its conversation: `auto` decides from
    what the worker and its runs observe (`loop.cache_affinity`); `on`/`off` (also `true`/`false`,
    1/0, yes/no) override it (docs/fleet.md). `WorkerTuning.cache_affinity`."""
    # -- Worker Versioning (docs/fleet.md): both set, or neither
    deployment_name: str | None = _env("AGENT_DEPLOYMENT_NAME", default=None)
    """Join this Worker Deployment (with `AGENT_BUILD_ID`; both or neither): runs are pinned,
    sessions auto-upgrade."""
    build_id: str | None = _env("AGENT_BUILD_ID", default=None)
    """The build id of this worker's Worker Deployment version (with `AGENT_DEPLOYMENT_NAME`)."""
    # -- external payload storage (runtime/payload_store.py); None: the default for the server
    payload_store: str | None = _env("AGENT_PAYLOAD_STORE", default=None)
    """`file:<folder>`, `s3://<bucket>` or `off`: payloads of 256 KiB or more are stored
    outside history, which keeps a reference. Unset: `file:.temporal/payloads` when no server
    is configured (a local dev server), else off. Every worker, `agent` command and codec
    server needs the same value."""
    # -- payload encryption and the codec server
    payload_key: SecretStr | None = _env(PAYLOAD_KEY_ENV, default=None)
    """A base64 AES-256 key: encrypt every payload before it reaches the server (`python -m
    durable_agents.runtime.codec` prints one)."""
    payload_key_id: str = _env(PAYLOAD_KEY_ID_ENV, default=DEFAULT_KEY_ID, min_length=1)
    """The name of that key, stored with each encrypted payload (rotation)."""
    payload_previous_keys: SecretStr | None = _env(PREVIOUS_KEYS_ENV, default=None)
    """`id=base64key,...`: older keys, for decoding only."""
    codec_endpoint: str | None = _env("AGENT_CODEC_ENDPOINT", default=None)
    """The codec server the embedded dev server's Web UI decodes payloads with."""
    codec_token: SecretStr | None = _env("AGENT_CODEC_TOKEN", default=None)
    """The bearer token the codec server requires."""
    web_ui_url: str | None = _env("AGENT_WEB_UI_URL", default=None)
    """The Temporal Web UI that runs are linked to (`agent serve`'s console, the start-up lines
    of `agent serve` and the worker), e.g. `https://cloud.temporal.io` or
    `http://localhost:8080`; `agent serve --web-ui URL` overrides it. Unset: a dev server's on
    this machine (`TEMPORAL_DEV_UI_PORT` for the worker's own, port + 1000 for another) once a
    Web UI answers there; no links for any other server (`runtime/web_ui.py`)."""
    # -- who may call the servers (agent serve, agent mcp --http, agent a2a): servers/auth
    principals_file: Path | None = _env("AGENT_PRINCIPALS_FILE", default=None)
    """A TOML file of principals (name, the SHA-256 of its token, tenant, roles) the servers
    take bearer tokens of; `agent token create` makes its entries. Unset (and no OIDC, no
    `AGENT_API_TOKEN`): the servers listen on loopback only, open to the local user."""
    api_token: SecretStr | None = _env("AGENT_API_TOKEN", default=None)
    """One bearer token (16 characters at least) that is an admin of the default tenant on
    every server. Never logged or printed."""
    decision_key: SecretStr | None = _env(DECISION_KEY_ENV, default=None)
    """The key (32 characters at least) the servers sign decisions with and the workers check
    them with (`runtime.decision_key`): the same on every server and worker. Unset: the key
    file's. Never logged or printed."""
    decision_key_file: Path | None = _env(DECISION_KEY_FILE_ENV, default=None)
    """The file of the decision key when `AGENT_DECISION_KEY` is unset, made on first use with
    mode 0600. Unset: `$XDG_STATE_HOME/durable-agents/decision-key` (`~/.local/state/...`)."""
    max_open_requests: int = _env("AGENT_MAX_OPEN_REQUESTS", default=100, ge=1)
    """The most requests one principal may have open at once on a server (event streams and
    `?wait=true` included); one more is 429 with `Retry-After`. Not applied to the local user
    of a server without credentials."""
    oidc_issuer: str | None = _env("AGENT_OIDC_ISSUER", default=None)
    """An OIDC issuer whose JWTs the servers take (the `oidc` extra): signed by a key of its
    JWKS, for `AGENT_OIDC_AUDIENCE`, not expired."""
    oidc_audience: str | None = _env("AGENT_OIDC_AUDIENCE", default=None)
    """The audience (`aud`) an OIDC token must name; required with `AGENT_OIDC_ISSUER`."""
    oidc_jwks_url: str | None = _env("AGENT_OIDC_JWKS_URL", default=None)
    """The issuer's JWKS. Unset: the `jwks_uri` of `<issuer>/.well-known/openid-configuration`."""
    oidc_name_claim: str = _env("AGENT_OIDC_NAME_CLAIM", default="sub", min_length=1)
    """The claim that names the principal (dotted for a nested one)."""
    oidc_tenant_claim: str = _env("AGENT_OIDC_TENANT_CLAIM", default="tenant", min_length=1)
    """The claim that names the principal's tenant (dotted for a nested one)."""
    oidc_roles_claim: str = _env("AGENT_OIDC_ROLES_CLAIM", default="roles", min_length=1)
    """The claim that lists the principal's roles (a list, or a space-separated string;
    dotted for a nested one, e.g. `realm_access.roles`); values other than `read`, `start`,
    `approve` and `admin` are left out."""
    oidc_tenant: str | None = _env("AGENT_OIDC_TENANT", default=None)
    """The tenant of an OIDC token without the tenant claim. Unset: such a token is refused."""
    oidc_algorithms: Annotated[list[str], NoDecode] = _env(
        "AGENT_OIDC_ALGORITHMS", default=["RS256", "ES256"]
    )
    """Comma-separated signature algorithms an OIDC token may use."""
    # -- observability
    otel_enabled: bool = _env("OTEL_ENABLED", default=False)
    """`1`/`true`: OpenTelemetry spans (GenAI conventions, exactly once per model and tool call
    however often a run replays) and agent metrics (the `otel` extra; docs/how-to/telemetry.md)."""
    otel_exporter_otlp_endpoint: str | None = _env("OTEL_EXPORTER_OTLP_ENDPOINT", default=None)
    """The OTLP/HTTP endpoint (collector, Jaeger, Tempo, Logfire) for the spans and metrics, with
    the other standard `OTEL_EXPORTER_OTLP_*` variables. Unset: spans to the console."""
    log_level: str = _env("LOG_LEVEL", default="INFO")
    """The logging level, `DEBUG` to `CRITICAL`."""
    log_format: Literal["text", "json"] = _env("LOG_FORMAT", default="text")
    """`text`, or `json` (one object per line)."""

    _temporal_env: dict[str, str] = PrivateAttr(default_factory=dict)
    _providers: dict[str, ProviderSettings] = PrivateAttr(default_factory=dict)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments, then the environment (or the mapping `from_env` was given); no
        `.env` file, no secrets directory."""
        environ = _SOURCE.get()
        if environ is not None:
            env_settings = _MappingEnvSource(settings_cls, environ)
        return init_settings, env_settings

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EnvironmentSettings:
        """The settings of `env` (default: `os.environ`), or a `SettingsError` naming every
        invalid variable."""
        environ = dict(os.environ if env is None else env)
        try:
            with _reading(environ):
                settings = cls()
        except ValidationError as error:
            raise SettingsError(describe_settings_error(error)) from None
        return settings

    def model_post_init(self, context: Any) -> None:
        """Keep the source's `TEMPORAL_*` variables for `temporalio.envconfig`, and read the
        model providers (whose `api_key_env` names other variables of the same source)."""
        environ = _SOURCE.get()
        environ = os.environ if environ is None else environ
        self._temporal_env = {
            k: v for k, v in environ.items() if k.upper().startswith(TEMPORAL_ENV_PREFIX)
        }
        text = self.model_providers.get_secret_value() if self.model_providers else None
        try:
            self._providers = parse_providers(text, self.model_providers_file, environ)
        except ProvidersError as error:
            raise SettingsError(str(error)) from None

    @property
    def providers(self) -> dict[str, ProviderSettings]:
        """Model providers by name (`MODEL_PROVIDERS` / `MODEL_PROVIDERS_FILE`)."""
        return dict(self._providers)

    # -- validation ----------------------------------------------------------------------------

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, data: Any) -> Any:
        """Surrounding spaces are dropped and a blank value counts as unset."""
        if not isinstance(data, dict):
            return data
        cleaned: dict[str, Any] = {}
        for name, value in data.items():
            if isinstance(value, str):
                value = value.strip()
                if not value:
                    continue
            cleaned[name] = value
        return cleaned

    @field_validator("tool_modules", "oidc_algorithms", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [m.strip() for m in value.split(",") if m.strip()]
        return value

    @field_validator("api_token")
    @classmethod
    def _long_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("too short: use at least 16 characters")
        return value

    @field_validator("decision_key", mode="before")
    @classmethod
    def _empty_decision_key_is_unset(cls, value: Any) -> Any:
        """An empty `AGENT_DECISION_KEY` (compose's `${AGENT_DECISION_KEY:-}`) is unset."""
        return None if value == "" else value

    @field_validator("decision_key")
    @classmethod
    def _long_decision_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_KEY_CHARS:
            raise ValueError(f"too short: use at least {MIN_KEY_CHARS} characters")
        return value

    @field_validator("web_ui_url")
    @classmethod
    def _web_ui_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from durable_agents.runtime.web_ui import checked_web_ui_url

        return checked_web_ui_url(value)

    @field_validator("memory_database_url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(
            ("postgresql://", "postgres://")
        ):
            raise ValueError("use a postgresql:// URL")
        return value

    @field_validator("payload_key")
    @classmethod
    def _valid_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parse_key(value.get_secret_value(), PAYLOAD_KEY_ENV)
        return value

    @field_validator("payload_previous_keys")
    @classmethod
    def _valid_keyring(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parse_keyring(value.get_secret_value(), PREVIOUS_KEYS_ENV)
        return value

    @field_validator("payload_store")
    @classmethod
    def _known_store(cls, value: str | None) -> str | None:
        if value is not None:
            from durable_agents.runtime.payload_store import parse_store

            parse_store(value)
        return value

    @model_validator(mode="after")
    def _oidc_audience(self) -> EnvironmentSettings:
        if self.oidc_issuer is not None and self.oidc_audience is None:
            raise ValueError("AGENT_OIDC_AUDIENCE: set it with AGENT_OIDC_ISSUER")
        return self

    @model_validator(mode="after")
    def _deployment_pair(self) -> EnvironmentSettings:
        if (self.deployment_name is None) != (self.build_id is None):
            missing = "AGENT_BUILD_ID" if self.build_id is None else "AGENT_DEPLOYMENT_NAME"
            raise ValueError(
                f"{missing}: set AGENT_DEPLOYMENT_NAME and AGENT_BUILD_ID together (or neither)"
            )
        return self

    @field_validator("cache_affinity", mode="before")
    @classmethod
    def _affinity_words(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower()
            return AFFINITY_WORDS.get(value, value)
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _known_level(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.upper()
            if value not in logging.getLevelNamesMapping():
                raise ValueError("use DEBUG, INFO, WARNING, ERROR or CRITICAL")
        return value

    @field_validator("log_format", mode="before")
    @classmethod
    def _lower_format(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    # -- derived values ------------------------------------------------------------------------

    @property
    def uses_demo_model(self) -> bool:
        return self.openai_api_key is None

    @property
    def payload_key_bytes(self) -> bytes | None:
        """`AGENT_PAYLOAD_KEY` decoded (validated when the settings were read)."""
        key = self.payload_key
        return parse_key(key.get_secret_value()) if key else None

    @property
    def previous_keys(self) -> dict[str, bytes]:
        """`AGENT_PAYLOAD_PREVIOUS_KEYS` decoded: key id -> key, for decoding only."""
        keys = self.payload_previous_keys
        return parse_keyring(keys.get_secret_value()) if keys else {}

    def temporal_environ(self) -> dict[str, str]:
        """The environment `temporalio.envconfig` reads: every `TEMPORAL_*` variable of the
        source, with the fields above (which may have been given as arguments) applied."""
        environ = dict(self._temporal_env)
        fields: dict[str, str | None] = {
            "TEMPORAL_ADDRESS": self.temporal_address,
            "TEMPORAL_NAMESPACE": self.temporal_namespace,
            "TEMPORAL_API_KEY": (
                self.temporal_api_key.get_secret_value() if self.temporal_api_key else None
            ),
            "TEMPORAL_TLS": None if self.temporal_tls is None else str(self.temporal_tls).lower(),
            "TEMPORAL_PROFILE": self.temporal_profile,
            "TEMPORAL_CONFIG_FILE": (
                None if self.temporal_config_file is None else str(self.temporal_config_file)
            ),
        }
        for name, value in fields.items():
            if value is None:
                environ.pop(name, None)
            else:
                environ[name] = value
        return environ


def describe_settings_error(error: ValidationError) -> str:
    """`NAME: what is wrong` for each invalid variable, on one line, without the values."""
    problems = []
    for item in error.errors(include_input=False, include_url=False):
        name = ".".join(str(part) for part in item["loc"]) or "settings"
        message = item["msg"].removeprefix("Value error, ")
        problems.append(message if message.startswith(name) else f"{name}: {message}")
    return "invalid environment: " + "; ".join(problems)
