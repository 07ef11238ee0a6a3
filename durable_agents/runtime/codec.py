"""Optional end-to-end encryption of Temporal payloads (AES-256-GCM).

Every payload the client and the worker send (workflow input and result, activity arguments
and results, signals, queries, updates, memo, activity summaries) is encrypted before it leaves
the process, so the Temporal server and its database only ever store ciphertext. Each payload
becomes:

- `data`: a random 12-byte nonce followed by AES-256-GCM(the original serialized `Payload`),
  authenticated together with the key id;
- `metadata`: `encoding: binary/encrypted` and `encryption-key-id: <id>`.

Decoding leaves payloads that are not `binary/encrypted` untouched (histories written before
encryption was switched on still read) and refuses, with `PayloadDecryptionError`, a payload
encrypted under an unknown key id or one that was tampered with.

Key rotation: encode with the current key, decode with any known key (`previous_keys`).

`python -m runtime.codec` prints a new base64 key for `AGENT_PAYLOAD_KEY`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, ExternalStorage, PayloadCodec

from durable_agents.runtime.extras import require

# The keys' format lives in runtime.payload_keys (runtime.settings validates the variables with
# it); the names are re-exported here, where users of the codec look for them.
from durable_agents.runtime.payload_keys import DEFAULT_KEY_ID as DEFAULT_KEY_ID
from durable_agents.runtime.payload_keys import KEY_BYTES as KEY_BYTES
from durable_agents.runtime.payload_keys import PAYLOAD_KEY_ENV as PAYLOAD_KEY_ENV
from durable_agents.runtime.payload_keys import PAYLOAD_KEY_ID_ENV as PAYLOAD_KEY_ID_ENV
from durable_agents.runtime.payload_keys import PREVIOUS_KEYS_ENV as PREVIOUS_KEYS_ENV
from durable_agents.runtime.payload_keys import generate_key as generate_key
from durable_agents.runtime.payload_keys import parse_key as parse_key
from durable_agents.runtime.payload_keys import parse_keyring as parse_keyring
from durable_agents.runtime.settings import EnvironmentSettings

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ENCODING = b"binary/encrypted"
ENCODING_KEY = "encoding"
KEY_ID_KEY = "encryption-key-id"
NONCE_BYTES = 12
TAG_BYTES = 16


class PayloadDecryptionError(ValueError):
    """An encrypted payload could not be decrypted: unknown key id, tampered or malformed."""


def _aesgcm(key: bytes) -> AESGCM:
    require("crypto", f"{PAYLOAD_KEY_ENV} (payload encryption)", "cryptography")
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)


def _check_key(key_id: str, key: bytes) -> None:
    if not key_id or not key_id.isprintable() or key_id != key_id.strip():
        raise ValueError(f"invalid encryption key id {key_id!r}: use a short printable name")
    if len(key) != KEY_BYTES:
        raise ValueError(
            f"encryption key {key_id!r} must be {KEY_BYTES} bytes (AES-256), got {len(key)}"
        )


class EncryptionCodec(PayloadCodec):
    """AES-256-GCM payload codec with a random nonce per payload and key rotation.

    `key`/`key_id` encrypt new payloads; `previous_keys` (id -> key) only decrypt. With
    `key=None` the codec is decode-only: it writes plaintext but still reads old ciphertext.
    """

    def __init__(
        self,
        key: bytes | None,
        key_id: str = DEFAULT_KEY_ID,
        previous_keys: Mapping[str, bytes] | None = None,
    ) -> None:
        keys = dict(previous_keys or {})
        if key is not None:
            if key_id in keys and keys[key_id] != key:
                raise ValueError(f"key id {key_id!r} is given twice with different keys")
            keys[key_id] = key
        if not keys:
            raise ValueError("EncryptionCodec needs at least one key")
        for kid, value in keys.items():
            _check_key(kid, value)
        self.key_id: str | None = key_id if key is not None else None
        self._ciphers = {kid: _aesgcm(value) for kid, value in keys.items()}

    @property
    def key_ids(self) -> list[str]:
        """Every key id this codec can decrypt."""
        return sorted(self._ciphers)

    def encrypt(self, payload: Payload) -> Payload:
        """One payload, encrypted with the current key (unchanged in decode-only mode)."""
        if self.key_id is None:
            return payload
        nonce = os.urandom(NONCE_BYTES)
        key_id = self.key_id.encode()
        sealed = self._ciphers[self.key_id].encrypt(nonce, payload.SerializeToString(), key_id)
        return Payload(metadata={ENCODING_KEY: ENCODING, KEY_ID_KEY: key_id}, data=nonce + sealed)

    def decrypt(self, payload: Payload) -> Payload:
        """One payload, decrypted; payloads that are not `binary/encrypted` pass unchanged."""
        if payload.metadata.get(ENCODING_KEY) != ENCODING:
            return payload
        raw_id = payload.metadata.get(KEY_ID_KEY)
        if raw_id is None:
            raise PayloadDecryptionError(
                f"encrypted payload has no {KEY_ID_KEY!r} metadata: cannot choose a key"
            )
        key_id = raw_id.decode("utf-8", errors="replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise PayloadDecryptionError(
                f"payload is encrypted with unknown key id {key_id!r} "
                f"(known key ids: {', '.join(self.key_ids)}); add that key to "
                f"{PAYLOAD_KEY_ENV} or {PREVIOUS_KEYS_ENV}"
            )
        if len(payload.data) < NONCE_BYTES + TAG_BYTES:
            raise PayloadDecryptionError(
                f"encrypted payload (key id {key_id!r}) is truncated: {len(payload.data)} bytes"
            )
        from cryptography.exceptions import InvalidTag

        nonce, sealed = payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:]
        try:
            plain = cipher.decrypt(nonce, sealed, raw_id)
        except InvalidTag:
            raise PayloadDecryptionError(
                f"encrypted payload (key id {key_id!r}) failed authentication: it was tampered "
                "with, or the key registered under that id is not the one that encrypted it"
            ) from None
        decoded = Payload()
        try:
            decoded.ParseFromString(plain)
        except DecodeError:
            raise PayloadDecryptionError(
                f"encrypted payload (key id {key_id!r}) does not hold a Temporal payload"
            ) from None
        return decoded

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encrypt(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decrypt(p) for p in payloads]


def data_converter(
    key: bytes | None,
    key_id: str = DEFAULT_KEY_ID,
    previous_keys: Mapping[str, bytes] | None = None,
    external_storage: ExternalStorage | None = None,
) -> DataConverter:
    """The pydantic data converter, encrypting payloads when a key is given, and storing
    large ones outside history with `external_storage` (runtime/payload_store.py: the SDK
    encrypts first, so the store holds ciphertext).

    Without `key`, `previous_keys` and `external_storage` this is `pydantic_data_converter`
    itself. With only `previous_keys` the codec is decode-only (for switching encryption off).
    """
    converter = pydantic_data_converter
    if external_storage is not None:
        converter = dataclasses.replace(converter, external_storage=external_storage)
    if key is None and not previous_keys:
        return converter
    codec = EncryptionCodec(key, key_id, previous_keys)
    return dataclasses.replace(converter, payload_codec=codec)


def codec_from_env(env: Mapping[str, str] | None = None) -> EncryptionCodec | None:
    """The codec that AGENT_PAYLOAD_KEY, AGENT_PAYLOAD_KEY_ID and AGENT_PAYLOAD_PREVIOUS_KEYS
    describe (read by `runtime.settings.EnvironmentSettings`); None when no key is set."""
    return codec_for(EnvironmentSettings.from_env(env))


def codec_for(settings: EnvironmentSettings) -> EncryptionCodec | None:
    """The codec of the settings' payload keys; None when no key is set."""
    key, previous = settings.payload_key_bytes, settings.previous_keys
    if key is None and not previous:
        return None
    return EncryptionCodec(key, settings.payload_key_id, previous)


def main() -> None:
    """`python -m runtime.codec`: print a new key for AGENT_PAYLOAD_KEY."""
    print(generate_key())


if __name__ == "__main__":
    main()
