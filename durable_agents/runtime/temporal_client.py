"""Connect to Temporal the way the `temporal` CLI does, with the pydantic data converter (CLI
JSON <-> pydantic models), optionally encrypting every payload (runtime/codec.py,
docs/encryption.md) and tracing (runtime/tracing.py).

Where and how to connect comes from `temporalio.envconfig`: a profile of a `temporal.toml`
(`TEMPORAL_PROFILE`, `TEMPORAL_CONFIG_FILE`, else the `temporal` CLI's own file) overridden by
the standard variables (`TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`,
`TEMPORAL_TLS*`, `TEMPORAL_GRPC_META_*`). The worker and the `agent` CLI both go through
`load_connection` and `connect_with_settings`.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta

from pydantic import SecretStr
from temporalio.client import Client, Interceptor
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import DataConverter, ExternalStorage
from temporalio.envconfig import ClientConfigProfile
from temporalio.service import TLSConfig

from durable_agents.runtime.codec import DEFAULT_KEY_ID, data_converter
from durable_agents.runtime.payload_store import StoreSpec, external_storage, store_spec
from durable_agents.runtime.settings import DEFAULT_NAMESPACE, EnvironmentSettings, SettingsError

log = logging.getLogger("temporal_client")

DEFAULT_ADDRESS = "localhost:7233"
"""What the SDK and the `temporal` CLI use when nothing names a server."""


@dataclass(frozen=True)
class TemporalConnection:
    """Where and how to reach Temporal. The API key is a `SecretStr`; the TLS material and the
    gRPC metadata (which may hold credentials) are left out of `repr`."""

    address: str | None
    """None: nothing configured it (the worker then uses localhost:7233 or a dev server)."""
    namespace: str = DEFAULT_NAMESPACE
    api_key: SecretStr | None = None
    tls: bool | TLSConfig = field(default=False, repr=False)
    rpc_metadata: Mapping[str, str] = field(default_factory=dict, repr=False)
    profile: str | None = None

    @property
    def uses_tls(self) -> bool:
        return self.tls is not False

    def with_target(
        self, address: str | None = None, namespace: str | None = None
    ) -> TemporalConnection:
        """The same credentials and TLS, with the address and/or namespace replaced."""
        return dataclasses.replace(
            self, address=address or self.address, namespace=namespace or self.namespace
        )

    def describe(self) -> str:
        """One line for logs and messages, never with a credential in it."""
        extras = [
            *(["profile " + repr(self.profile)] if self.profile else []),
            *(["TLS"] if self.uses_tls else []),
            *(["API key"] if self.api_key else []),
        ]
        where = f"{self.address or DEFAULT_ADDRESS}, namespace {self.namespace}"
        return where + (f" ({', '.join(extras)})" if extras else "")


def with_pydantic_payloads(converter: DataConverter) -> DataConverter:
    """`converter` with the pydantic payload converter (its codec and external storage kept):
    the engine's inputs, results, signals and updates are pydantic models."""
    if converter.payload_converter_class is PydanticPayloadConverter:
        return converter
    return dataclasses.replace(converter, payload_converter_class=PydanticPayloadConverter)


def engine_client(client: Client) -> Client:
    """`client`, or a client over the same connection whose data converter reads and writes
    the engine's pydantic payloads (an application's own `Client.connect(...)` has the SDK's
    default converter)."""
    converter = with_pydantic_payloads(client.data_converter)
    if converter is client.data_converter:
        return client
    config = client.config()
    config["data_converter"] = converter
    return Client(**config)


def _safe_config_error(error: BaseException, settings: EnvironmentSettings) -> str:
    """The first line of an envconfig error (a TOML parse error quotes the offending line of the
    file, which may hold the API key), with any known secret masked."""
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    text = text.removeprefix("Configuration loading error: ")
    secrets = [v for k, v in settings.temporal_environ().items() if "KEY" in k or "DATA" in k]
    for secret in secrets:
        if secret:
            text = text.replace(secret, "**********")
    return re.sub(r"\s+", " ", text)


def load_connection(settings: EnvironmentSettings) -> TemporalConnection:
    """The connection the settings describe, resolved by `temporalio.envconfig`: the profile
    (`TEMPORAL_PROFILE`, default "default") of the config file, then the environment on top.
    Raises `SettingsError` naming the variable when the file or the profile is wrong."""
    config_file = settings.temporal_config_file
    if config_file is not None and not config_file.is_file():
        raise SettingsError(f"TEMPORAL_CONFIG_FILE: no such file: {config_file}")
    where = str(config_file) if config_file else "the default temporal.toml"
    try:
        profile = ClientConfigProfile.load(
            profile=settings.temporal_profile,
            config_source=config_file,
            override_env_vars=settings.temporal_environ(),
        )
        config = profile.to_client_connect_config()
    except OSError as error:  # a TLS certificate or key file named by the profile
        raise SettingsError(
            f"Temporal TLS file {error.filename or ''} cannot be read: {error.strerror or error}"
        ) from None
    except Exception as error:  # temporalio's ConfigError (a RuntimeError)
        reason = _safe_config_error(error, settings)
        if "not found" in reason.lower() and "profile" in reason.lower():
            raise SettingsError(
                f"TEMPORAL_PROFILE: profile {settings.temporal_profile or 'default'!r} "
                f"not found in {where}"
            ) from None
        raise SettingsError(f"TEMPORAL_CONFIG_FILE ({where}): {reason}") from None
    api_key = config.get("api_key")
    return TemporalConnection(
        address=config.get("target_host") or None,
        namespace=config.get("namespace") or DEFAULT_NAMESPACE,
        api_key=SecretStr(api_key) if api_key else None,
        tls=config.get("tls", False),
        rpc_metadata=dict(config.get("rpc_metadata") or {}),
        profile=settings.temporal_profile,
    )


async def connect(
    address: str,
    namespace: str = DEFAULT_NAMESPACE,
    payload_key: bytes | None = None,
    key_id: str = DEFAULT_KEY_ID,
    previous_keys: Mapping[str, bytes] | None = None,
    interceptors: Sequence[Interceptor] = (),
    connect_timeout: timedelta | None = None,
) -> Client:
    """A plain (no TLS, no API key) client whose payloads are AES-256-GCM encrypted under
    `payload_key` when it is given (`previous_keys`, id -> key, only decode, for rotation).
    The worker and the CLI use `connect_with_settings`."""
    return await Client.connect(
        address,
        namespace=namespace,
        interceptors=interceptors,
        connect_timeout=connect_timeout,
        data_converter=data_converter(payload_key, key_id, previous_keys),
    )


async def connect_with_settings(
    settings: EnvironmentSettings,
    connection: TemporalConnection | None = None,
    *,
    interceptors: Sequence[Interceptor] = (),
    connect_timeout: timedelta | None = None,
    external_storage: ExternalStorage | None = None,
) -> Client:
    """A client for `connection` (default: `load_connection(settings)`) with the payload keys of
    `settings` (`AGENT_PAYLOAD_KEY`, its id, the previous keys), so the worker and the `agent`
    CLI encrypt and decrypt alike, and the payload store `open_payload_store` opened for them.
    Workers built on it use the same converter and `interceptors` (tracing)."""
    connection = connection or load_connection(settings)
    log.info("connecting to %s", connection.describe())
    return await Client.connect(
        connection.address or DEFAULT_ADDRESS,
        namespace=connection.namespace,
        api_key=connection.api_key.get_secret_value() if connection.api_key else None,
        tls=connection.tls,
        rpc_metadata=connection.rpc_metadata,
        interceptors=interceptors,
        connect_timeout=connect_timeout,
        data_converter=data_converter(
            settings.payload_key_bytes,
            settings.payload_key_id,
            settings.previous_keys,
            external_storage,
        ),
    )


def payload_store_of(
    settings: EnvironmentSettings, connection: TemporalConnection | None = None
) -> StoreSpec:
    """The payload store `AGENT_PAYLOAD_STORE` names, or its default: `file:.temporal/payloads`
    when nothing names a server (a local dev server, embedded or found), else off."""
    connection = connection or load_connection(settings)
    return store_spec(settings.payload_store, server_configured=connection.address is not None)


@asynccontextmanager
async def open_payload_store(
    settings: EnvironmentSettings, connection: TemporalConnection | None = None
) -> AsyncIterator[ExternalStorage | None]:
    """The external storage every process of the project opens the same way (worker, CLI,
    codec server), for `connect_with_settings(external_storage=...)`."""
    async with external_storage(payload_store_of(settings, connection)) as storage:
        yield storage
