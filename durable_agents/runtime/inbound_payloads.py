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
for good becomes an `UNDECODABLE_ENCODING` stand-in whose data names the step that refused it and
the error's type, never what the error says (a store path, the worker's key ids: the worker's
log has it). The payload then fails later, where the workflow's own rules handle any input that
does not decode:
- a signal is dropped with a log line (by the SDK, or by `workflows.refusals.read_payload`);
- an update is refused;
- a run's start fails at once, naming the problem.

An activity's or a child's result that cannot be decoded still fails the task (the SDK decodes
it outside workflow code), as before. An error that may pass (`is_transient`: the store or the
network unreachable) is raised as before, and the server retries the task.

The payload converter (`GuardedPayloadConverter`) reads the stand-ins and guards the one place
where the SDK decodes payloads with no type hints before any workflow code runs: a start, update
or signal with more payloads than its handler's one raw parameter. One of them that does not
decode (a stand-in, an unknown encoding, bytes that are not JSON) used to fail every workflow
task of a start; here it is a non-retryable `ApplicationError` of type `INVALID_INPUT` naming
the payload (`invalid input: payload 2 of 3 does not decode: ...`), so the run fails at once,
an update is refused and a signal is dropped.

Only workers use this converter (`worker_client`): a client reading a result or the codec
server still raises on a payload it cannot decode.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import DataConverter, EncodingPayloadConverter
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.errors import INVALID_INPUT
from durable_agents.loop.validation_errors import describe_validation_error
from durable_agents.runtime.payload_store import PayloadStoreError

log = logging.getLogger("inbound_payloads")

UNDECODABLE_ENCODING = b"binary/undecodable"
"""The encoding of a payload that stands in for one that could not be decoded."""
MAX_ENCODING_CHARS = 60

Step = Callable[[Sequence[Payload]], Awaitable[list[Payload]]]

STEPS = {
    "_decode_reference_payload_sequence": "it is marked as stored outside history, and the "
    "reference does not decode",
    "_external_retrieve_payload_sequence": "it refers to a payload stored outside history "
    "that this worker cannot read",
    "_decode_payload_sequence": "the payload codec cannot decode it",
}
"""What a stand-in says for each inbound step of `DataConverter` that refused its payload."""


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


def undecodable(step: Step, error: BaseException) -> Payload:
    """The stand-in for a payload that `step` could not decode: its data names the step and
    the error's type, nothing the error says (that may name a store path or the worker's key
    ids; the worker's log has it)."""
    what = STEPS.get(getattr(step, "__name__", ""), "it cannot be decoded")
    reason = f"{what} ({type(error).__name__})"
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
        return [undecodable(step, error)]


class UndecodablePayloadError(ValueError):
    """A stand-in was read: the payload it stands in for could not be decoded."""


class StandInPayloadConverter(EncodingPayloadConverter):
    """Reads `UNDECODABLE_ENCODING` stand-ins, only to raise `UndecodablePayloadError` with
    what the stand-in says; encodes nothing."""

    @property
    def encoding(self) -> str:
        return UNDECODABLE_ENCODING.decode()

    def to_payload(self, value: Any) -> Payload | None:
        return None

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        raise UndecodablePayloadError(payload.data.decode("utf-8", errors="replace"))


def decoding_problem(payload: Payload, error: Exception) -> str:
    """Why `payload` does not decode, in words safe for history: no payload data."""
    if isinstance(error, UndecodablePayloadError):
        return str(error)
    if isinstance(error, ValidationError):
        return f"not JSON: {describe_validation_error(error)}"
    encoding = payload.metadata.get("encoding", b"").decode("utf-8", errors="replace")
    if isinstance(error, KeyError):
        return f"its encoding {encoding[:MAX_ENCODING_CHARS]!r} is unknown"
    return f"{encoding[:MAX_ENCODING_CHARS]!r} does not decode ({type(error).__name__})"


class GuardedPayloadConverter(PydanticPayloadConverter):
    """The pydantic payload converter that also reads stand-ins (`StandInPayloadConverter`)
    and refuses, as bad input, several payloads decoded with no type hints where one does not
    decode (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._set_converters(*self.converters.values(), StandInPayloadConverter())

    def from_payloads(
        self, payloads: Sequence[Payload], type_hints: list[type] | None = None
    ) -> list[Any]:
        if type_hints is not None or len(payloads) < 2:
            return super().from_payloads(payloads, type_hints)
        values = []
        for index, payload in enumerate(payloads, start=1):
            try:
                values.extend(super().from_payloads([payload]))
            except Exception as error:
                problem = decoding_problem(payload, error)
                refusal = ApplicationError(
                    f"invalid input: payload {index} of {len(payloads)} does not decode: "
                    + problem,
                    type=INVALID_INPUT,
                    non_retryable=True,
                )
                raise refusal from None
        return values


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
    """`converter` (its codec, external storage...), guarded; the pydantic payload converter
    becomes `GuardedPayloadConverter` (another payload converter is kept as it is)."""
    if isinstance(converter, GuardedDataConverter):
        return converter
    fields = {f.name: getattr(converter, f.name) for f in dataclasses.fields(converter) if f.init}
    if fields["payload_converter_class"] is PydanticPayloadConverter:
        fields["payload_converter_class"] = GuardedPayloadConverter
    return GuardedDataConverter(**fields)


def worker_client(client: Client) -> Client:
    """`client`, or a client over the same connection whose data converter is `guarded`: what
    the engine's workers run with."""
    if isinstance(client.data_converter, GuardedDataConverter):
        return client
    config = client.config()
    config["data_converter"] = guarded(client.data_converter)
    return Client(**config)
