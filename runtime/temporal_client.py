"""Connect to Temporal with the pydantic data converter (CLI JSON <-> pydantic models),
optionally encrypting every payload (see runtime/codec.py and docs/encryption.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

from temporalio.client import Client, Interceptor

from runtime.codec import DEFAULT_KEY_ID, data_converter


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
