"""External payload storage (runtime/payload_store.py, `AGENT_PAYLOAD_STORE`): the filesystem
driver and the S3 driver against a real S3 API (moto's server, started here on a free port),
both behind the project's data converter with encryption on, and a run whose model request is
larger than the threshold: its history keeps a reference, the store keeps ciphertext, the
model gets the whole request."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference
from temporalio.client import Client
from temporalio.converter import JSONProtoPayloadConverter, StorageDriverClaim
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.runtime.codec import data_converter, generate_key, parse_key
from durable_agents.runtime.dev_server import is_listening
from durable_agents.runtime.payload_store import (
    OFF,
    THRESHOLD,
    FileStorageDriver,
    PayloadStoreError,
    StoreSpec,
    external_storage,
    parse_store,
    payloads_in,
    store_spec,
)
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from testkit.crash_tools import free_port
from testkit.eventually import eventually
from tests.conftest import FAKE_MODEL, SECRET_API_KEY, started_workers

BIG = "large document line, the same text over and over. " * 20_000  # about 1 MB


def test_the_setting_names_a_store_or_off() -> None:
    assert parse_store("off") == OFF
    assert parse_store("file:/tmp/p") == StoreSpec("file", folder=Path("/tmp/p"))
    assert parse_store("s3://agent-payloads") == StoreSpec("s3", bucket="agent-payloads")
    for bad in ("file:", "s3://", "s3://a/b", "redis://x", "on"):
        with pytest.raises(ValueError, match="use off, file:<folder> or s3://<bucket>"):
            parse_store(bad)
    assert store_spec(None, server_configured=False).describe() == "file:.temporal/payloads"
    assert store_spec(None, server_configured=True) == OFF


async def test_file_driver_stores_ciphertext_and_history_keeps_a_reference(
    tmp_path: Path,
) -> None:
    key = parse_key(generate_key())
    async with external_storage(StoreSpec("file", folder=tmp_path)) as storage:
        converter = data_converter(key, "k1", external_storage=storage)
        [payload] = await converter.encode([{"document": BIG}])
        assert payload.ByteSize() < 1024  # the reference, not the document
        assert payload.external_payloads[0].size_bytes > len(BIG)
        [stored] = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert b"large document line" not in stored.read_bytes()  # encrypted before stored
        assert await converter.decode([payload], [dict]) == [{"document": BIG}]
        small = (await converter.encode(["short"]))[0]
        assert not small.external_payloads  # under the threshold: inline, as before

        stored.write_bytes(stored.read_bytes()[:-1] + b"x")  # tampered in the store
        with pytest.raises(PayloadStoreError, match="does not match its digest"):
            await FileStorageDriver(tmp_path).retrieve(None, [_claim(payload)])  # type: ignore[arg-type]


def _claim(reference: Payload) -> StorageDriverClaim:
    ref = JSONProtoPayloadConverter().from_payload(reference, ExternalStorageReference)
    return StorageDriverClaim(claim_data=dict(ref.claim_data))


@pytest.fixture
async def moto_s3(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    """moto's S3 server on a free port; the standard AWS variables point at it."""
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def listening() -> bool:
            if server.poll() is not None:
                raise RuntimeError(f"moto_server exited with code {server.returncode}")
            return is_listening("127.0.0.1", port)

        await eventually(listening, timeout=60, what="moto's S3 server to listen")
        for name, value in {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(name, value)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(10)


async def test_s3_driver_round_trip_against_a_real_s3_api(moto_s3: str) -> None:
    import aioboto3

    async with aioboto3.Session().client("s3") as s3:
        await s3.create_bucket(Bucket="agent-payloads")
    key = parse_key(generate_key())
    async with external_storage(parse_store("s3://agent-payloads")) as storage:
        converter = data_converter(key, "k1", external_storage=storage)
        [payload] = await converter.encode([{"document": BIG}])
        assert payload.ByteSize() < 1024
        assert await converter.decode([payload], [dict]) == [{"document": BIG}]
    async with aioboto3.Session().client("s3") as s3:
        listed = await s3.list_objects_v2(Bucket="agent-payloads")
        [obj] = listed["Contents"]
        body = await (await s3.get_object(Bucket="agent-payloads", Key=obj["Key"]))["Body"].read()
    assert obj["Size"] > len(BIG) and b"large document line" not in body


@pytest.fixture
async def stored_client(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[tuple[Client, Path]]:
    folder = tmp_path / "payloads"
    async with external_storage(StoreSpec("file", folder=folder)) as storage:
        config = temporal_env.client.config()
        config["data_converter"] = data_converter(None, external_storage=storage)
        yield Client(**config), folder


async def test_a_run_larger_than_a_payload_keeps_only_references_in_history(
    stored_client: tuple[Client, Path], tmp_path: Path
) -> None:
    client, folder = stored_client
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    document = ("0123456789 abcdefghij " * 9_000)[:190_000]
    (workspace / "doc.txt").write_text(document)
    prompt = "Summarise doc.txt. " + "context " * 24_000  # about 190 000 characters
    with FakeOpenAIServer() as server:
        server.enqueue(
            fake.tool_calls(fake.call("read_file", {"path": "doc.txt", "max_chars": 200_000})),
            fake.text("It repeats the digits and the alphabet."),
        )
        model = OpenAIChatModel(
            api_key=SECRET_API_KEY, base_url=server.base_url, default_model=FAKE_MODEL
        )
        async with AsyncExitStack() as stack:
            queue = await started_workers(stack, client, model, workspace)
            handle = await client.start_workflow(
                "AgentWorkflow",
                {
                    "prompt": prompt,
                    "tools": ["read_file"],
                    "max_observation_chars": 200_000,
                    "context_transfer": "full",  # the second call carries both: 380 KB
                },
                id=f"big-{os.getpid()}-{time.monotonic_ns()}",
                task_queue=queue,
                result_type=AgentResult,
            )
            result = await handle.result()
        await model.close()
        assert result.answer == "It repeats the digits and the alphabet."
        last = server.requests[-1].messages
        assert last[1]["content"] == prompt  # the model got the prompt whole
        assert last[-1]["content"] == document  # and the document whole
    history = await handle.fetch_history()
    sizes = [p.ByteSize() for event in history.events for p in payloads_in(event)]
    assert max(sizes) < THRESHOLD  # no payload in history at the threshold or over it
    stored = [p for p in folder.rglob("*") if p.is_file()]
    assert stored and max(p.stat().st_size for p in stored) > 2 * 190_000


async def test_without_storage_the_converter_is_the_plain_one() -> None:
    from temporalio.contrib.pydantic import pydantic_data_converter

    async with external_storage(OFF) as storage:
        assert storage is None
        assert data_converter(None, external_storage=storage) is pydantic_data_converter
