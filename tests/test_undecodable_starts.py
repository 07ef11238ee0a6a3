"""A start (and an update or signal) with several payloads, one of them undecodable, sent raw: a
hand-built `StartWorkflowExecution` over gRPC and the plain Temporal CLI.

With one payload, every handler takes it raw and fails the run naming the problem
(`workflows.refusals`). With several, the SDK decodes them all with no type hints before any
workflow code runs, and one that does not decode used to fail the first workflow task at every
retry: the run wedged. Now the run fails at once with a typed `ApplicationError`
(`INVALID_INPUT`, non-retryable) that names the payload, and no workflow task fails. An update
is refused the same way, and a signal is dropped while the run goes on.

Every kind of run that can be started is covered: an agent run, a plan-and-execute run, a start
shaped like a sub-agent child, and a session. The worker is the real one (`build_workers`) with
the payload codec and the file payload store of `agent worker`; the undecodable payloads are
those of `tests/test_undecodable_signals.py` (every layer a worker decodes in).
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload, Payloads, WorkflowType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import StartWorkflowExecutionRequest
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.context_cache import ContextCache
from durable_agents.contracts.errors import INVALID_INPUT
from tests.conftest import FAKE_MODEL, started_workers
from tests.scripted_model import ScriptedChatModel
from tests.test_bad_input import workflow_task_failures
from tests.test_undecodable_signals import (
    REFERENCE_MARKER,
    UNDECODABLE,
    codec_client,
    raw_signal,
    still_goes_on,
    waiting_run,
)

FAILS_WITHIN_SECONDS = 10.0
"""A bad start must fail the run this soon (a wedged one retries its task for ever)."""

STARTS: dict[str, tuple[str, dict[str, Any]]] = {
    "an agent run": ("AgentWorkflow", {"prompt": "hi mallory"}),
    "a plan-and-execute run": ("AgentWorkflow", {"prompt": "hi", "mode": "plan_and_execute"}),
    "a start shaped like a sub-agent child": (
        "AgentWorkflow",
        {"prompt": "hi", "depth": 1, "parent": {"workflow_id": "p", "call_id": "c"}},
    ),
    "a session": ("SessionWorkflow", {}),
}


def json_payload(value: Any) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(value).encode())


@dataclass(frozen=True)
class Workers:
    client: Client
    task_queue: str


@pytest.fixture
async def workers(temporal_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[Workers]:
    """The real workers, as `agent worker` runs them with a payload key and the file store."""
    client = codec_client(temporal_env, tmp_path / "payloads")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, workspace, context_cache=ContextCache())
        yield Workers(client, queue)


async def raw_start(workers: Workers, workflow: str, payloads: list[Payload]) -> WorkflowHandle:
    """`StartWorkflowExecution` with exactly these payloads (no data converter involved)."""
    workflow_id = f"bad-start-{uuid.uuid4().hex[:8]}"
    await workers.client.workflow_service.start_workflow_execution(
        StartWorkflowExecutionRequest(
            namespace=workers.client.namespace,
            workflow_id=workflow_id,
            workflow_type=WorkflowType(name=workflow),
            task_queue=TaskQueue(name=workers.task_queue),
            input=Payloads(payloads=payloads),
            identity="a raw sender",
            request_id=str(uuid.uuid4()),
        )
    )
    return workers.client.get_workflow_handle(workflow_id)


async def refusal(handle: WorkflowHandle[Any, Any]) -> ApplicationError:
    """The run failed at once, with no failed workflow task: its typed failure."""
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=FAILS_WITHIN_SECONDS)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError), cause
    assert cause.type == INVALID_INPUT and cause.non_retryable, cause
    assert await workflow_task_failures(handle) == []
    return cause


def sends(kind: str) -> dict[tuple[str, int], list[Payload]]:
    """(case, the bad payload's place: 1, 2, or 0 when it is sent alone): the payloads. Every
    case for an agent run; for the other kinds, which take their input the same way, one of
    each layer (the encoding, the codec)."""
    _, good_input = STARTS[kind]
    good = json_payload(good_input)
    cases = UNDECODABLE if kind == "an agent run" else SOME_UNDECODABLE
    alone = kind == "an agent run"
    return {
        (case, place): [good, bad] if place == 2 else [bad, good] if place == 1 else [bad]
        for case, bad in cases.items()
        for place in ((1, 2, 0) if alone else (1, 2))
    }


SOME_UNDECODABLE = {
    case: UNDECODABLE[case]
    for case in ("an encoding no converter knows", "encrypted with a key the worker does not have")
}


def says_nothing_secret(message: str) -> None:
    """No payload data, no store path, no key id of the worker's in a failure's message."""
    assert "mallory" not in message and "/payloads" not in message, message
    assert "'k1'" not in message and "known key ids" not in message, message


@pytest.mark.parametrize("kind", list(STARTS))
async def test_a_start_with_an_undecodable_payload_among_several_fails_at_once(
    workers: Workers, kind: str
) -> None:
    workflow, _ = STARTS[kind]
    handles = {
        key: await raw_start(workers, workflow, payloads) for key, payloads in sends(kind).items()
    }
    causes = await asyncio.gather(*(refusal(handle) for handle in handles.values()))
    for (case, place), cause in zip(handles, causes, strict=True):
        expected = (
            f"invalid input: payload {place} of 2 does not decode: "
            if place
            else f"invalid {workflow} input: the input does not decode: "
        )
        assert cause.message.startswith(expected), (case, cause.message)
        says_nothing_secret(cause.message)


async def test_the_temporal_cli_starting_a_run_with_two_inputs_that_do_not_decode(
    workers: Workers, temporal_env: WorkflowEnvironment
) -> None:
    """`temporal workflow start --input A --input B --input-meta KEY=VALUE`: the metadata goes
    on every input: an unknown encoding, or the SDK's external-storage marker on plain JSON."""
    cli = Path(sys.executable).parent / "temporal"
    for meta, named in (("encoding=x/bogus", "x/bogus"), (f"{REFERENCE_MARKER}=true", "")):
        workflow_id = f"cli-start-{uuid.uuid4().hex[:8]}"
        sent = await asyncio.create_subprocess_exec(
            str(cli), "workflow", "start",
            "--address", temporal_env.client.service_client.config.target_host,
            "--workflow-id", workflow_id, "--type", "AgentWorkflow",
            "--task-queue", workers.task_queue,
            "--input", '{"prompt": "hi"}', "--input", '{"prompt": "there"}',
            "--input-meta", meta,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await sent.communicate()
        assert sent.returncode == 0, err.decode()
        cause = await refusal(workers.client.get_workflow_handle(workflow_id))
        assert cause.message.startswith("invalid input: payload 1 of 2 does not decode"), meta
        assert named in cause.message


async def test_an_update_is_refused_and_a_signal_dropped_while_the_run_goes_on(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The same payloads in an update (`decide`) and in a signal (`approve`), to a run that
    waits for an approval. They are sent by a client with no codec, as `RawValue`s: exactly
    these payloads reach the server."""
    client = codec_client(temporal_env, tmp_path / "payloads")
    good = json_payload({"call_id": "w1", "decision": "approve", "by": "mallory"})
    async with waiting_run(client, tmp_path) as handle:
        sender = temporal_env.client.get_workflow_handle(handle.id)
        for case, bad in UNDECODABLE.items():
            for order, payloads in ((2, [good, bad]), (1, [bad, good])):
                with pytest.raises(WorkflowUpdateFailedError) as refused:
                    await sender.execute_update("decide", args=[RawValue(p) for p in payloads])
                cause = refused.value.cause
                assert isinstance(cause, ApplicationError) and cause.type == INVALID_INPUT, cause
                assert cause.message.startswith(
                    f"invalid input: payload {order} of 2 does not decode"
                ), (case, cause.message)
                await raw_signal(client, handle.id, "approve", payloads)
        await still_goes_on(handle, client)
