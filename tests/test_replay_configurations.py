"""Replay does not depend on the worker's configuration (issue 39): a run recorded on one worker
replays on any other, and on a plain `Replayer` built from the workflow classes and the data
converter alone (no catalog, no flags), as a user replays production histories in CI.

What a worker's configuration decides for a new run (keep the search attributes, take the raised
payload limits) is asked through `workflow.patched`, called whatever the configuration, and
answered by the worker's `patch_activation` (runtime/workers.py) on a live task only: the answer
is kept in the history, and replay reads it back from there."""

from __future__ import annotations

import logging
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowHistory,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from durable_agents.contracts.payload_limits import TODAY
from durable_agents.runtime import search_attributes
from durable_agents.runtime.workers import build_replayer
from durable_agents.tools.catalog import Catalog
from durable_agents.workflows.agent_workflow import AgentWorkflow
from durable_agents.workflows.refusals import LARGE_PAYLOADS_MARKER
from durable_agents.workflows.search_attributes import SEARCH_ATTRIBUTES_MARKER
from durable_agents.workflows.session_workflow import SessionWorkflow
from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.catalog import TEST_CATALOG
from tests.conftest import FAKE_MODEL, started_workers
from tests.histories.record import WORKFLOW_ID, WORKFLOW_IDS
from tests.hitl_support import wait_for_pending
from tests.scripted_model import ScriptedChatModel

HISTORIES = Path(__file__).parent / "histories"
COMMITTED = sorted(HISTORIES.rglob("*.json"))
"""Every committed history (tests/histories and its folders)."""
FLIPPED = TEST_CATALOG.with_search_attributes(
    not TEST_CATALOG.search_attributes
).with_large_payloads(not TEST_CATALOG.large_payloads)
"""The tests' catalog with every boolean flag the other way round."""
WITH_ATTRIBUTES = TEST_CATALOG.with_search_attributes()


def plain_replayer() -> Replayer:
    """What a user builds to replay their histories: the public workflow classes and the
    project's data converter, nothing else (the application's catalog, every flag off)."""
    return Replayer(
        workflows=[AgentWorkflow, SessionWorkflow], data_converter=pydantic_data_converter
    )


def committed_history(path: Path) -> WorkflowHistory:
    started = WorkflowHistory.from_json("?", path.read_text()).events[0]
    recorded_id = started.workflow_execution_started_event_attributes.workflow_id
    return WorkflowHistory.from_json(
        recorded_id or WORKFLOW_IDS.get(path.stem, WORKFLOW_ID), path.read_text()
    )


async def replay_failure(history: WorkflowHistory, replayer: Replayer) -> str | None:
    outcome = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    return None if outcome.replay_failure is None else str(outcome.replay_failure)


def test_there_are_committed_histories_to_replay() -> None:
    names = {p.relative_to(HISTORIES).as_posix() for p in COMMITTED}
    assert {"simple.json", "session.json", "search_attributes.json"} <= names


@pytest.mark.parametrize(
    "catalog", [TEST_CATALOG, FLIPPED], ids=["flags-as-recorded", "every-flag-flipped"]
)
async def test_every_committed_history_replays_whatever_the_flags(catalog: Catalog) -> None:
    replayer = build_replayer(catalog)
    failures = {
        p.name: failure
        for p in COMMITTED
        if (failure := await replay_failure(committed_history(p), replayer)) is not None
    }
    assert not failures


async def run_once(client: Client, queue: str, prompt: str, **more: Any) -> WorkflowHandle:
    handle = await client.start_workflow(
        "AgentWorkflow", {"prompt": prompt, **more}, id=f"cfg-{uuid.uuid4()}", task_queue=queue
    )
    await handle.result()
    return handle


def kinds(history: WorkflowHistory) -> list[EventType.ValueType]:
    return [e.event_type for e in history.events]


def agent_upserts(history: WorkflowHistory) -> list[str]:
    """The agent search attributes a run upserted (not the SDK's `TemporalChangeVersion`, which
    it upserts with each patch marker, `agent-definition-once` in every new run)."""
    upserts = [
        event.upsert_workflow_search_attributes_event_attributes.search_attributes
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
    ]
    return [name for u in upserts for name in u.indexed_fields if name != "TemporalChangeVersion"]


def markers(history: WorkflowHistory) -> list[str]:
    found = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            details = event.marker_recorded_event_attributes.details.get("patch-data")
            if details is not None:
                found.append(details.payloads[0].data.decode())
    return found


async def test_a_run_kept_with_search_attributes_replays_without_them(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The issue's failure: the marker in history, and a replayer (a plain one, the tests'
    own with the flag off) that would not have asked for it."""
    client = temporal_env.client
    assert await search_attributes.ensure(client)
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(sm.tool_calls(sm.call("calculator", {"expression": "6*7"})), sm.text("42"))
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, tmp_path, catalog=WITH_ATTRIBUTES)
        handle = await run_once(client, queue, "6*7?", tools=["calculator"])
    history = await handle.fetch_history()
    assert EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES in kinds(history)
    assert any(SEARCH_ATTRIBUTES_MARKER in m for m in markers(history))
    assert await replay_failure(history, plain_replayer()) is None
    assert await replay_failure(history, build_replayer(TEST_CATALOG)) is None
    assert await replay_failure(history, build_replayer(FLIPPED)) is None


async def test_a_run_kept_without_them_replays_on_a_worker_with_them(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = temporal_env.client
    assert await search_attributes.ensure(client)  # registered: only the worker says off
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(sm.text("plain"))
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, tmp_path, catalog=TEST_CATALOG)
        handle = await run_once(client, queue, "hi")
    history = await handle.fetch_history()
    assert not agent_upserts(history)
    assert not any(SEARCH_ATTRIBUTES_MARKER in m for m in markers(history))
    assert await replay_failure(history, build_replayer(WITH_ATTRIBUTES)) is None
    assert await replay_failure(history, plain_replayer()) is None


async def test_a_run_that_keeps_them_fails_its_task_on_a_worker_without_them(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Moved to a worker whose server lacks the attributes, a run that keeps them fails its
    workflow task naming them (retried, never a nondeterminism error, never the run), and
    finishes once a worker that has them takes the task."""
    client = temporal_env.client
    assert await search_attributes.ensure(client)
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    args = {"path": "w.txt", "content": "hi"}
    model.enqueue(sm.tool_calls(sm.call("write_file", args, id="w1")), sm.text("written"))
    queue = f"agents-test-{uuid.uuid4()}"
    workflow_id = f"cfg-move-{uuid.uuid4()}"
    async with AsyncExitStack() as stack:
        await started_workers(stack, client, model, tmp_path, queue, catalog=WITH_ATTRIBUTES)
        handle = await client.start_workflow(
            "AgentWorkflow",
            {"prompt": "write it", "tools": ["write_file"]},
            id=workflow_id,
            task_queue=queue,
        )
        await wait_for_pending(handle)
    async with AsyncExitStack() as stack:
        await started_workers(stack, client, model, tmp_path, queue, catalog=TEST_CATALOG)
        await handle.signal("approve", {"call_id": "w1"})
        failure = await first_task_failure(handle)
    assert "AgentPhase" in failure and "not have them registered" in failure, failure
    assert "Nondeterminism" not in failure
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    async with AsyncExitStack() as stack:
        await started_workers(stack, client, model, tmp_path, queue, catalog=WITH_ATTRIBUTES)
        assert (await handle.result())["answer"] == "written"
    assert await replay_failure(await handle.fetch_history(), plain_replayer()) is None


async def first_task_failure(handle: WorkflowHandle) -> str:
    """The message of the run's first failed workflow task (waiting for one)."""

    async def failed() -> str:
        for event in (await handle.fetch_history()).events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                return event.workflow_task_failed_event_attributes.failure.message
        raise AssertionError("no workflow task failed yet")

    return await eventually(failed, what="a failed workflow task")


TURNS = 100


async def test_a_hundred_turn_run_replays_on_a_plain_replayer(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The issue's run: 100 model calls with a tool call each, kept with the search attributes,
    replayed (every run of it, across continue-as-new) on a plain `Replayer`."""
    client = temporal_env.client
    assert await search_attributes.ensure(client)
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    for turn in range(TURNS - 1):
        model.enqueue(sm.tool_calls(sm.call("calculator", {"expression": f"{turn}+1"})))
    model.enqueue(sm.text("counted"))
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, tmp_path, catalog=WITH_ATTRIBUTES)
        handle = await run_once(
            client, queue, "count", tools=["calculator"], max_iterations=TURNS + 5
        )
    histories = [h async for h in runs_of(client, handle.id)]
    calls = sum(
        1
        for h in histories
        for e in h.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
    )
    assert calls == TURNS
    assert all(any(SEARCH_ATTRIBUTES_MARKER in m for m in markers(h)) for h in histories)
    replayer = plain_replayer()
    for history in histories:
        assert await replay_failure(history, replayer) is None


async def runs_of(client: Client, workflow_id: str) -> Any:
    """The history of every run of `workflow_id`, first to last."""
    query = f'WorkflowId="{workflow_id}"'
    runs = [r async for r in client.list_workflows(query)]
    for run in sorted(runs, key=lambda r: r.start_time):
        yield await client.get_workflow_handle(workflow_id, run_id=run.run_id).fetch_history()


async def test_raised_payload_limits_are_read_from_history_not_the_worker(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A prompt over today's limit: taken where the worker stores large payloads (the run
    records `large-payloads`), refused where it does not; each history replays on a worker
    configured the other way, and on a plain `Replayer`."""
    client = temporal_env.client
    prompt = "x" * (TODAY.text_chars + 1)
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(sm.text("read it"))
    async with AsyncExitStack() as stack:
        stored = TEST_CATALOG.with_large_payloads()
        queue = await started_workers(stack, client, model, tmp_path, catalog=stored)
        taken = await run_once(client, queue, prompt)
        queue = await started_workers(stack, client, model, tmp_path, catalog=TEST_CATALOG)
        refused = await client.start_workflow(
            "AgentWorkflow", {"prompt": prompt}, id=f"cfg-{uuid.uuid4()}", task_queue=queue
        )
        with pytest.raises(WorkflowFailureError):
            await refused.result()
    taken_history = await taken.fetch_history()
    assert any(LARGE_PAYLOADS_MARKER in m for m in markers(taken_history))
    refused_history = await refused.fetch_history()
    assert not any(LARGE_PAYLOADS_MARKER in m for m in markers(refused_history))
    for history in (taken_history, refused_history):
        for replayer in (plain_replayer(), build_replayer(TEST_CATALOG), build_replayer(FLIPPED)):
            assert await replay_failure(history, replayer) is None


async def test_a_replayer_without_a_runs_tools_says_which_it_lacks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Tools are code, not configuration: a replayer without the run's tools cannot replay it
    (refusing the input where the run was accepted), and its log names what it lacks."""
    history = committed_history(HISTORIES / "parallel_tools.json")
    with caplog.at_level(logging.WARNING, logger="durable_agents.workflows.replay"):
        failure = await replay_failure(history, plain_replayer())
    assert failure is not None and "Nondeterminism" in failure
    said = [r.getMessage() for r in caplog.records if r.name == "durable_agents.workflows.replay"]
    assert said and "this worker lacks echo, refuses, which the run names" in said[0], said
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="durable_agents.workflows.replay"):
        assert await replay_failure(history, build_replayer(TEST_CATALOG)) is None
    assert not [r for r in caplog.records if r.name == "durable_agents.workflows.replay"]
