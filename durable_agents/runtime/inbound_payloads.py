"""`GuardedDataConverter`: a worker's data converter under which a payload that cannot be decoded
never fails a workflow task.

Before any workflow code runs, a worker decodes every payload of an activation in three steps
(`temporalio.bridge.worker.decode_activation`): the payloads marked as external-storage
references (through the codec), the references fetched from their store, then the payload
codec. A payload that fails any step fails the whole activation, so the workflow task fails at
every retry and the run is wedged. Anyone who can signal a run could do that with one payload,
even with the plain Temporal CLI: `--input-meta __temporal_external_storage_reference=true` on
JSON, or `encoding=binary/encrypted` with a key the worker does not hold.

Here a step that fails is tried again one payload at a time. A payload that cannot be decoded
for good becomes an `UNDECODABLE_ENCODING` payload whose data says why. No payload converter
reads that encoding, so the payload fails later, where the workflow's own rules handle any input
that does not decode:
- a signal is dropped with a log line (by the SDK, or by `workflows.refusals.read_payload`);
- an update is refused;
- a run's start fails at once, naming the problem.

An activity's or a child's result that cannot be decoded still fails the task (the SDK decodes
it outside workflow code), as before. An error that may pass (`is_transient`: the store or the
network unreachable) is raised as before, and the server retries the task.

Only workers use this converter (`worker_client`): a client reading a result or the codec
server still raises on a payload it cannot decode.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import DataConverter

from durable_agents.runtime.payload_store import PayloadStoreError

log = logging.getLogger("inbound_payloads")

UNDECODABLE_ENCODING = b"binary/undecodable"
"""The encoding of a payload that stands in for one that could not be decoded."""
MAX_REASON_CHARS = 500

Step = Callable[[Sequence[Payload]], Awaitable[list[Payload]]]


def is_transient(error: BaseException) -> bool:
    """Whether decoding may work when the task is tried again: the network or a store that is
    unreachable now. A payload that is not what it claims (a marker on JSON, a reference that
    does not parse or names nothing stored, an unknown encryption key, a failed tag) is not."""
    if isinstance(error, PayloadStoreError):
        return error.transient
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    if isinstance(error, OSError):
        return not isinstance(error, (FileNotFoundError, IsADirectoryError, NotADirectoryError))
    if type(error).__module__.split(".")[0] in {"botocore", "aiobotocore", "aiohttp"}:
        response = getattr(error, "response", None)
        code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
        return code not in {"NoSuchKey", "NoSuchBucket", "404", "InvalidObjectState"}
    return False


def undecodable(error: BaseException) -> Payload:
    """The stand-in for a payload that could not be decoded: its data says why."""
    reason = f"{type(error).__name__}: {error}"[:MAX_REASON_CHARS]
    return Payload(metadata={"encoding": UNDECODABLE_ENCODING}, data=reason.encode())


async def decoded_each(step: Step, payloads: Sequence[Payload]) -> list[Payload]:
    """`step` over `payloads`; when it fails for good, over each payload alone, with
    `undecodable` in place of each one that fails."""
    try:
        return await step(payloads)
    except Exception as error:
        if is_transient(error):
            raise
        if len(payloads) != 1:
            return [item for payload in payloads for item in await decoded_each(step, [payload])]
        log.warning("a payload that cannot be decoded is replaced: %s", error)
        return [undecodable(error)]


@dataclass(frozen=True)
class GuardedDataConverter(DataConverter):
    """A `DataConverter` whose inbound decoding steps never fail on a bad payload (see the
    module docstring); everything else is the converter it was made from."""

    async def _decode_reference_payload_sequence(
        self, payloads: Sequence[Payload]
    ) -> list[Payload]:
        return await decoded_each(super()._decode_reference_payload_sequence, payloads)

    async def _external_retrieve_payload_sequence(
        self, payloads: Sequence[Payload]
    ) -> list[Payload]:
        return await decoded_each(super()._external_retrieve_payload_sequence, payloads)

    async def _decode_payload_sequence(self, payloads: Sequence[Payload]) -> list[Payload]:
        return await decoded_each(super()._decode_payload_sequence, payloads)


def guarded(converter: DataConverter) -> GuardedDataConverter:
    """`converter` (its payload converter, codec, external storage...), guarded."""
    if isinstance(converter, GuardedDataConverter):
        return converter
    fields = {f.name: getattr(converter, f.name) for f in dataclasses.fields(converter) if f.init}
    return GuardedDataConverter(**fields)


def worker_client(client: Client) -> Client:
    """`client`, or a client over the same connection whose data converter is `guarded`: what
    the engine's workers run with."""
    if isinstance(client.data_converter, GuardedDataConverter):
        return client
    config = client.config()
    config["data_converter"] = guarded(client.data_converter)
    return Client(**config)
