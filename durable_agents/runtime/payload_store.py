"""External payload storage: payloads over a threshold leave history for a store, and history
keeps a reference (driver, claim, size) in their place.

`AGENT_PAYLOAD_STORE` chooses the store, the same for the worker, the `agent` CLI and the codec
server (each opens it with `external_storage`):

- `file:<folder>`: `FileStorageDriver`, files in a folder every process can read (one machine,
  or a shared volume). The default when no Temporal server is configured (`make run`'s local
  or embedded dev server): `file:.temporal/payloads`, beside the dev server's database;
- `s3://<bucket>`: the SDK's S3 driver (`temporalio.contrib.aws.s3driver`) through `aioboto3`
  (the `s3` extra), configured by the standard `AWS_*` variables (`AWS_ENDPOINT_URL` for an
  S3-compatible server); the bucket must exist;
- `off`: every payload stays in history (the default with a configured server).

The data converter encrypts first and stores second, so with `AGENT_PAYLOAD_KEY` the store holds
ciphertext. Payloads of at least `THRESHOLD` bytes are stored: no payload in history is larger.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.api.sdk.v1 import ExternalStorageReference
from temporalio.converter import (
    ExternalStorage,
    JSONProtoPayloadConverter,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from durable_agents.runtime.extras import require

THRESHOLD = 256 * 1024
"""Payloads of this many bytes or more are stored (the size Temporal warns at)."""
DEFAULT_FOLDER = Path(".temporal/payloads")
ENV = "AGENT_PAYLOAD_STORE"


class PayloadStoreError(ValueError):
    """A stored payload that cannot be read back (missing, or not what was stored); `transient`
    when reading it again may work (the store could not be read now)."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class StoreSpec:
    """Where payloads over the threshold go."""

    kind: Literal["off", "file", "s3"]
    folder: Path | None = None
    bucket: str | None = None

    @property
    def on(self) -> bool:
        return self.kind != "off"

    def describe(self) -> str:
        if self.kind == "file":
            return f"file:{self.folder}"
        if self.kind == "s3":
            return f"s3://{self.bucket}"
        return "off"


OFF = StoreSpec("off")


def parse_store(value: str) -> StoreSpec:
    """`off`, `file:<folder>` or `s3://<bucket>`; a ValueError says what is accepted."""
    text = value.strip()
    if text == "off":
        return OFF
    if text.startswith("file:") and text.removeprefix("file:").strip():
        return StoreSpec("file", folder=Path(text.removeprefix("file:").strip()))
    if text.startswith("s3://"):
        bucket = text.removeprefix("s3://").rstrip("/")
        if bucket and "/" not in bucket:
            return StoreSpec("s3", bucket=bucket)
    raise ValueError("use off, file:<folder> or s3://<bucket>")


def store_spec(value: str | None, server_configured: bool) -> StoreSpec:
    """The store `AGENT_PAYLOAD_STORE` names; unset: `file:.temporal/payloads` for a local
    server (nothing names one), off for a configured one."""
    if value is None:
        return OFF if server_configured else StoreSpec("file", folder=DEFAULT_FOLDER)
    return parse_store(value)


class FileStorageDriver(StorageDriver):
    """Payloads as files under `folder`, named by the SHA-256 of their bytes (so the same
    payload is stored once, and a file is checked against its name when read back)."""

    def __init__(self, folder: Path, driver_name: str = "agent.file") -> None:
        self._folder = folder
        self._name = driver_name

    def name(self) -> str:
        return self._name

    def type(self) -> str:
        return "agent.file"

    def path_of(self, digest: str) -> Path:
        return self._folder / digest[:2] / digest

    def _write(self, data: bytes) -> StorageDriverClaim:
        digest = hashlib.sha256(data).hexdigest()
        target = self.path_of(digest)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(f".{digest}.{uuid.uuid4().hex}.tmp")
            temporary.write_bytes(data)
            os.replace(temporary, target)  # atomic: a reader sees all of it or nothing
        return StorageDriverClaim(claim_data={"sha256": digest, "bytes": str(len(data))})

    def _read(self, claim: StorageDriverClaim) -> Payload:
        digest = claim.claim_data.get("sha256", "")
        path = self.path_of(digest)
        try:
            data = path.read_bytes()
        except OSError as error:
            raise PayloadStoreError(
                f"stored payload {digest[:12]}... cannot be read from {path}: {error.strerror}",
                transient=not isinstance(error, (FileNotFoundError, IsADirectoryError)),
            ) from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise PayloadStoreError(f"stored payload {path} does not match its digest")
        return Payload.FromString(data)

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        return [await asyncio.to_thread(self._write, p.SerializeToString()) for p in payloads]

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return [await asyncio.to_thread(self._read, claim) for claim in claims]


@asynccontextmanager
async def external_storage(spec: StoreSpec) -> AsyncIterator[ExternalStorage | None]:
    """The `ExternalStorage` of `spec` while the context is open (an S3 client is one
    connection pool, closed on exit); None when the store is off."""
    if spec.kind == "off":
        yield None
        return
    if spec.kind == "file":
        assert spec.folder is not None
        driver: StorageDriver = FileStorageDriver(spec.folder)
        yield ExternalStorage(drivers=[driver], payload_size_threshold=THRESHOLD)
        return
    require("s3", f"{ENV}={spec.describe()} (an S3 payload store)")
    import aioboto3
    from temporalio.contrib.aws.s3driver import S3StorageDriver
    from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client

    assert spec.bucket is not None
    # botocore reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION / AWS_DEFAULT_REGION,
    # AWS_PROFILE and AWS_ENDPOINT_URL itself.
    async with aioboto3.Session().client("s3") as s3:
        driver = S3StorageDriver(client=new_aioboto3_client(s3), bucket=spec.bucket)
        yield ExternalStorage(drivers=[driver], payload_size_threshold=THRESHOLD)


REFERENCE_TYPE = ExternalStorageReference.DESCRIPTOR.full_name.encode()


def reference_of(payload: Payload) -> ExternalStorageReference | None:
    """The store reference `payload` is (what history keeps of a stored payload: the driver's
    name, its claim, the stored size in `external_payloads`), or None for any other payload."""
    if payload.metadata.get("messageType") != REFERENCE_TYPE:
        return None
    if payload.metadata.get("encoding") != b"json/protobuf":
        return None
    reference = JSONProtoPayloadConverter().from_payload(payload, ExternalStorageReference)
    return reference if isinstance(reference, ExternalStorageReference) else None


async def retrieve(storage: ExternalStorage, payload: Payload) -> Payload:
    """The stored payload `payload` refers to (as it was stored: encrypted when a key was
    set), or `payload` itself when it is not a reference. `PayloadStoreError` when the
    reference names a driver `storage` lacks or the store cannot give it back."""
    reference = reference_of(payload)
    if reference is None:
        return payload
    driver = next((d for d in storage.drivers if d.name() == reference.driver_name), None)
    if driver is None:
        raise PayloadStoreError(
            f"payload stored by driver {reference.driver_name!r}, which this store lacks "
            f"(it has {', '.join(d.name() for d in storage.drivers)}): set AGENT_PAYLOAD_STORE "
            "as the worker has it"
        )
    claim = StorageDriverClaim(claim_data=dict(reference.claim_data))
    try:
        [stored] = await driver.retrieve(StorageDriverRetrieveContext(), [claim])
    except PayloadStoreError:
        raise
    except Exception as error:  # the S3 driver's client errors
        raise PayloadStoreError(
            f"stored payload {dict(reference.claim_data)} cannot be read back: {error}"
        ) from None
    return stored


def payloads_in(message: Message) -> list[Payload]:
    """Every payload a message carries, however deep: of a history event, its input, result,
    signal, memo and marker details (what a check that history keeps only references reads)."""
    found: list[Payload] = []

    def walk(node: Message) -> None:
        if isinstance(node, Payload):
            found.append(node)
            return
        for field, value in node.ListFields():
            if field.message_type is None:
                continue
            if field.message_type.GetOptions().map_entry:
                items = list(value.values())
            elif not isinstance(value, Message):  # a repeated field
                items = list(value)
            else:
                items = [value]
            for item in items:
                if isinstance(item, Message):
                    walk(item)

    walk(message)
    return found
