"""The last wedge (issue 35 item 7): a signal with several payloads, one of them undecodable, sent
raw (a hand-built `SignalWorkflowExecution` over gRPC, and the plain Temporal CLI) to a run that
waits for an approval. The signal is ignored and the run goes on: it still answers `status`,
still waits for the same call, completes after a real approval, and its history holds no
failed workflow task.

"Undecodable" is taken at every layer a worker decodes a payload in before any workflow code
runs: an encoding no converter knows, a payload marked as an external-storage reference that is
none (or names a file that is not in the store), and one marked as encrypted with a key the
worker does not have. The worker is the real one (`build_workers`), plain or with the payload
codec and the file payload store of `agent worker`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload, Payloads, WorkflowExecution
from temporalio.api.workflowservice.v1 import SignalWorkflowExecutionRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.converter import ExternalStorage
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.context_cache import ContextCache
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.runtime.codec import data_converter
from durable_agents.runtime.payload_store import FileStorageDriver
from tests import scripted_model as sm
from tests.conftest import FAKE_MODEL, started_workers
from tests.hitl_support import wait_for_pending
from tests.scripted_model import ScriptedChatModel
from tests.test_bad_input import workflow_task_failures

REFERENCE_MARKER = "__temporal_external_storage_reference"
GOOD = Payload(metadata={"encoding": b"json/plain"}, data=b'{"call_id": "w1", "by": "mallory"}')

UNDECODABLE: dict[str, Payload] = {
    "an encoding no converter knows": Payload(metadata={"encoding": b"x/bogus"}, data=b"{}"),
    "marked as an external reference, holding JSON": Payload(
        metadata={"encoding": b"json/plain", REFERENCE_MARKER: b"true"}, data=b"{}"
    ),
    "an external reference that does not parse": Payload(
        metadata={"encoding": b"json/external-storage-reference"}, data=b"{not a reference"
    ),
    "an external reference of another shape": Payload(
        metadata={"encoding": b"json/external-storage-reference"}, data=b'{"driverName": "x"}'
    ),
    "an external reference to a stored payload that does not exist": Payload(
        metadata={"encoding": b"json/external-storage-reference"},
        data=json.dumps(
            {"driver_name": "agent.file", "driver_claim": {"claim_data": {"sha256": "0" * 64}}}
        ).encode(),
    ),
    "encrypted with a key the worker does not have": Payload(
        metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"stolen"},
        data=b"\x00" * 40,
    ),
    "encrypted, but truncated": Payload(
        metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"k1"}, data=b"\x00"
    ),
}


async def raw_signal(client: Client, workflow_id: str, name: str, payloads: list[Payload]) -> None:
    """`SignalWorkflowExecution` with exactly these payloads (no data converter involved)."""
    await client.workflow_service.signal_workflow_execution(
        SignalWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=workflow_id),
            signal_name=name,
            input=Payloads(payloads=payloads),
            identity="a raw sender",
            request_id=str(uuid.uuid4()),
        )
    )


@asynccontextmanager
async def waiting_run(client: Client, tmp_path: Path) -> AsyncIterator[WorkflowHandle[Any, Any]]:
    """A run on a real worker of `client` (its data converter: the worker's), waiting for the
    approval of `w1`."""
    workspace = tmp_path / f"workspace-{uuid.uuid4().hex[:6]}"
    workspace.mkdir()
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(
        sm.tool_calls(sm.call("write_file", {"path": "a.txt", "content": "hi"}, id="w1")),
        sm.text("done"),
    )
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, workspace, context_cache=ContextCache())
        handle = await client.start_workflow(
            "AgentWorkflow",
            {"prompt": "write it", "tools": ["write_file"]},
            id=f"wedge-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
        )
        await wait_for_pending(handle)
        yield handle


async def still_goes_on(handle: WorkflowHandle[Any, Any], client: Client) -> None:
    """It answers `status`, waits for the same call, completes once really approved, and no
    workflow task failed on the way."""
    status = await handle.query("status", result_type=AgentStatus)
    assert status.phase == "waiting_for_human" and [p.call_id for p in status.pending] == ["w1"]
    await client.get_workflow_handle(handle.id).signal("approve", {"call_id": "w1", "by": "ann"})
    run = client.get_workflow_handle(handle.id, result_type=AgentResult)
    result = await asyncio.wait_for(run.result(), timeout=30)
    assert result.answer == "done" and result.steps[0].status == "ok"
    assert await workflow_task_failures(handle) == []


def codec_client(env: WorkflowEnvironment, store: Path) -> Client:
    """A client (and so a worker) as `agent worker` makes one with AGENT_PAYLOAD_KEY set and
    the file payload store on."""
    converter = data_converter(
        b"k" * 32,
        key_id="k1",
        external_storage=ExternalStorage(drivers=[FileStorageDriver(store)]),
    )
    config = env.client.config()
    config["data_converter"] = converter
    return Client(**config)


@pytest.mark.parametrize("case", list(UNDECODABLE))
async def test_a_signal_with_an_undecodable_payload_among_several_is_ignored(
    temporal_env: WorkflowEnvironment, tmp_path: Path, case: str
) -> None:
    client = codec_client(temporal_env, tmp_path / "payloads")
    async with waiting_run(client, tmp_path) as handle:
        for payloads in ([GOOD, UNDECODABLE[case]], [UNDECODABLE[case], GOOD], [UNDECODABLE[case]]):
            await raw_signal(client, handle.id, "approve", payloads)
        await asyncio.sleep(0.5)  # the worker has taken them (a failed task would show by now)
        assert await workflow_task_failures(handle) == []
        await still_goes_on(handle, client)


@pytest.mark.parametrize("case", list(UNDECODABLE))
async def test_the_same_on_a_worker_without_codec_or_store(
    temporal_env: WorkflowEnvironment, tmp_path: Path, case: str
) -> None:
    client = temporal_env.client
    async with waiting_run(client, tmp_path) as handle:
        await raw_signal(client, handle.id, "approve", [GOOD, UNDECODABLE[case]])
        await raw_signal(client, handle.id, "reject", [UNDECODABLE[case]])
        await asyncio.sleep(0.5)
        assert await workflow_task_failures(handle) == []
        await still_goes_on(handle, client)


async def test_the_temporal_cli_sending_two_inputs_marked_as_stored_elsewhere(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """`temporal workflow signal --input A --input B --input-meta KEY=VALUE`: the metadata goes
    on every input, here the SDK's external-storage marker on plain JSON."""
    client = temporal_env.client
    async with waiting_run(client, tmp_path) as handle:
        cli = Path(sys.executable).parent / "temporal"
        sent = await asyncio.create_subprocess_exec(
            str(cli), "workflow", "signal",
            "--address", temporal_env.client.service_client.config.target_host,
            "--workflow-id", handle.id, "--name", "approve",
            "--input", '{"call_id": "w1"}', "--input", '{"call_id": "w1"}',
            "--input-meta", f"{REFERENCE_MARKER}=true",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await sent.communicate()
        assert sent.returncode == 0, err.decode()
        await asyncio.sleep(0.5)
        assert await workflow_task_failures(handle) == []
        await still_goes_on(handle, client)
