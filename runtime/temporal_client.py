"""Connect to Temporal with the pydantic data converter (CLI JSON <-> pydantic models),
optionally encrypting every payload (see runtime/codec.py and docs/encryption.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

from temporalio.client import Client, Interceptor

from runtime.codec import DEFAULT_KEY_ID, data_converter, parse_key, parse_keyring
from runtime.settings import WorkerSettings


async def connect(
    address: str,
    namespace: str = "default",
    payload_key: bytes | None = None,
    key_id: str = DEFAULT_KEY_ID,
    previous_keys: Mapping[str, bytes] | None = None,
    interceptors: Sequence[Interceptor] = (),
    connect_timeout: timedelta | None = None,
) -> Client:
    """A client whose payloads are AES-256-GCM encrypted under `payload_key` when it is given
    (`previous_keys`, id -> key, are accepted for decoding only, for key rotation).

    Workers built from this client encrypt and decrypt with the same converter, and use its
    `interceptors` (tracing) too.
    """
    return await Client.connect(
        address,
        namespace=namespace,
        interceptors=interceptors,
        connect_timeout=connect_timeout,
        data_converter=data_converter(payload_key, key_id, previous_keys),
    )


async def connect_with_settings(
    settings: WorkerSettings,
    address: str,
    namespace: str,
    *,
    interceptors: Sequence[Interceptor] = (),
    connect_timeout: timedelta | None = None,
) -> Client:
    """`connect` with the payload keys from `settings` (`AGENT_PAYLOAD_KEY`, its id and the
    previous keys), so the worker and the `agent` CLI encrypt and decrypt alike."""
    key = settings.payload_key
    previous = settings.payload_previous_keys
    return await connect(
        address,
        namespace,
        payload_key=parse_key(key.get_secret_value()) if key else None,
        key_id=settings.payload_key_id,
        previous_keys=parse_keyring(previous.get_secret_value()) if previous else None,
        interceptors=interceptors,
        connect_timeout=connect_timeout,
    )
