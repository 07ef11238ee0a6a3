"""The payload encryption keys' format: the variables that hold them, how they are written
(base64 AES-256, `id=base64key,...` for previous keys) and how a new one is made.

Both the settings (`runtime/settings.py`, which validates the variables) and the codec
(`runtime/codec.py`, which encrypts with the keys) read this module; neither imports the other
for it.
"""

from __future__ import annotations

import base64
import binascii
import os

KEY_BYTES = 32

PAYLOAD_KEY_ENV = "AGENT_PAYLOAD_KEY"
PAYLOAD_KEY_ID_ENV = "AGENT_PAYLOAD_KEY_ID"
PREVIOUS_KEYS_ENV = "AGENT_PAYLOAD_PREVIOUS_KEYS"
DEFAULT_KEY_ID = "default"


def generate_key() -> str:
    """A new random AES-256 key, base64-encoded (the format of `AGENT_PAYLOAD_KEY`)."""
    return base64.b64encode(os.urandom(KEY_BYTES)).decode("ascii")


def parse_key(text: str, name: str = PAYLOAD_KEY_ENV) -> bytes:
    """Decode a base64 AES-256 key; the error names `name` but never echoes the key."""
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(
            f"{name} is not valid base64; generate a key with `python -m runtime.codec`"
        ) from None
    if len(key) != KEY_BYTES:
        raise ValueError(
            f"{name} must be {KEY_BYTES} bytes (base64 of an AES-256 key), got {len(key)} bytes; "
            "generate one with `python -m runtime.codec`"
        )
    return key


def parse_keyring(text: str, name: str = PREVIOUS_KEYS_ENV) -> dict[str, bytes]:
    """Parse `id=base64key,id2=base64key` (decode-only keys kept for rotation)."""
    keys: dict[str, bytes] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key_id, sep, value = item.partition("=")
        key_id = key_id.strip()
        if not sep or not key_id:
            raise ValueError(f"{name} must look like 'id=base64key,id2=base64key'")
        keys[key_id] = parse_key(value, f"{name} ({key_id!r})")
    return keys
