"""Two `python worker.py` processes on one task queue, on a server that does not hand activities
back to the worker that scheduled them (eager dispatch off, the plain server's default): each
run's model calls after the first go to the worker-specific queue of the worker whose context
cache holds the conversation, so none misses; when that worker is killed, the call waits on its
queue no longer than the schedule-to-start fallback, then goes to the shared queue, and every
approved write happens exactly once (docs/fleet.md), also when the worker dies while it writes
(the call's heartbeat timeout, not its start-to-close timeout, notices: the call is retried)."""

from __future__ import annotations

import hashlib
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.approvals import PendingRequest
from durable_agents.testing.fake_openai import FakeOpenAIServer
from durable_agents.tools.definition import ToolOptions
from durable_agents.workflows.model_gateway import AFFINITY_FALLBACK
from testkit.bench_model import bench_model
from testkit.crash_tools import WorkerCluster, attempts_of
from testkit.eventually import eventually
from testkit.fleet_history import ModelCallRoute, model_call_routes
from tests.hitl_support import wait_for_pending

NO_EAGER = ["--dynamic-config-value", "system.enableActivityEagerExecution=false"]
TIMER_SHIFT = ["--dynamic-config-value", 'history.timerProcessorMaxTimeShift="50ms"']


@pytest.fixture(scope="module")
async def plain_server() -> AsyncIterator[Client]:
    """A dev server configured like a plain one: no eager activity dispatch."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=f"{sys.prefix}/bin/temporal",
        dev_server_extra_args=[*NO_EAGER, *TIMER_SHIFT],
        data_converter=pydantic_data_converter,
    )
    yield env.client
    await env.shutdown()


@pytest.fixture(scope="module")
def bench_fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        server.set_handler(bench_model)
        yield server


@pytest.fixture
async def fleet(
    plain_server: Client, bench_fake: FakeOpenAIServer, tmp_path: Path
) -> AsyncIterator[WorkerCluster]:
    cluster = WorkerCluster(
        plain_server,
        bench_fake.base_url,
        tmp_path,
        extra_env={"MEMORY_DATABASE_PATH": str(tmp_path / "memory.db"), "LOG_LEVEL": "INFO"},
    )
    try:
        for _ in range(2):
            await cluster.start_worker()
        yield cluster
    finally:
        await cluster.close()


async def routes(handle: WorkflowHandle[Any, Any]) -> list[ModelCallRoute]:
    return model_call_routes((await handle.fetch_history()).events)


def approval_of(request: PendingRequest) -> dict[str, str]:
    """Approve what was shown, by call id and digest (never `*`: docs/fleet.md)."""
    return {"call_id": request.call_id, "args_digest": request.args_digest, "by": "test"}


def pid_of(worker_queue: str) -> int:
    """The pid in a worker-specific queue's name (`<queue>@<host>-<pid>-<random>`)."""
    return int(worker_queue.rsplit("-", 2)[-2])


async def test_each_conversation_stays_on_the_worker_that_caches_it(
    fleet: WorkerCluster,
) -> None:
    handles = [
        await fleet.start_run({"prompt": "[calc 2] two rounds", "tools": ["calculator"]})
        for _ in range(8)
    ]
    for handle in handles:
        result = await fleet.result_of(handle)
        assert result.stop_reason == "completed"
    queues: set[str] = set()
    for handle in handles:
        calls = await routes(handle)
        assert [c.outcome for c in calls] == ["answered"] * 3, calls  # no miss, no resend
        first, *later = calls
        assert first.task_queue == fleet.task_queue  # the first call: any worker
        assert first.worker_queue is not None
        assert first.worker_queue.startswith(f"{fleet.task_queue}@")
        # every later call went to the worker that answered the first, and it answered
        assert {c.task_queue for c in later} == {first.worker_queue}
        assert {c.worker_queue for c in later} == {first.worker_queue}
        queues.add(first.worker_queue)
    assert {pid_of(q) for q in queues} <= {w.pid for w in fleet.workers}, queues


async def test_a_killed_workers_conversations_fall_back_to_the_shared_queue(
    fleet: WorkerCluster,
) -> None:
    labels = [f"fleet-{uuid.uuid4().hex[:8]}" for _ in range(6)]
    handles = [
        await fleet.start_run({"prompt": f"[approve {label}] write it", "tools": ["write_file"]})
        for label in labels
    ]

    shown: dict[str, PendingRequest] = {}
    for handle in handles:
        [shown[handle.id]] = await wait_for_pending(handle)
    holder: dict[str, str] = {}
    for handle in handles:
        [call] = await routes(handle)
        assert call.worker_queue is not None
        holder[handle.id] = call.worker_queue
    by_pid = {w.pid: w for w in fleet.workers}
    victim_queue = next(iter(holder.values()))
    victim = by_pid[pid_of(victim_queue)]
    orphans = [h for h in handles if holder[h.id] == victim_queue]

    await fleet.kill(victim)
    for handle in handles:
        await handle.signal("approve", approval_of(shown[handle.id]))
    for handle in handles:
        result = await fleet.result_of(handle, timeout=120)
        assert result.stop_reason == "completed", result

    for handle in orphans:  # the next call waited on the dead worker's queue, then moved
        calls = await routes(handle)
        gone = [c for c in calls if c.outcome == "worker_gone"]
        assert [c.task_queue for c in gone] == [victim_queue], calls
        assert gone[0].wait_seconds == pytest.approx(AFFINITY_FALLBACK.total_seconds(), abs=1.5)
        assert calls[-1].task_queue == fleet.task_queue and calls[-1].outcome == "answered"
    workspace = fleet.folder / "workspace"
    assert sorted(p.name for p in workspace.iterdir()) == sorted(f"{x}.txt" for x in labels)
    assert {p.read_text() for p in workspace.iterdir()} == {"ok"}


async def test_an_approved_write_whose_worker_dies_while_it_writes_is_written_once(
    fleet: WorkerCluster,
) -> None:
    label = f"mid-{uuid.uuid4().hex[:8]}"
    handle = await fleet.start_run(
        {"prompt": f"[approve {label}] write it", "tools": ["write_file"]}
    )
    [request] = await wait_for_pending(handle)
    # write_file writes a temporary file named after the call's idempotency key first: a FIFO
    # there holds the first attempt (opening it blocks) while the activity heartbeats.
    key = f"{handle.id}/1/{request.call_id}"
    workspace = fleet.folder / "workspace"
    fifo = workspace / f".{label}.txt.{hashlib.sha256(key.encode()).hexdigest()[:16]}.tmp"
    os.mkfifo(fifo)
    await handle.signal("approve", approval_of(request))

    async def writer() -> int:
        for activity in (await handle.describe()).raw_description.pending_activities:
            if activity.activity_type.name == "write_file" and activity.last_worker_identity:
                return int(activity.last_worker_identity.split("@")[0])
        raise AssertionError("write_file has not started yet")

    pid = await eventually(writer, what="write_file to start on a worker")
    await fleet.kill(next(w for w in fleet.workers if w.pid == pid))
    fifo.unlink()  # the retry, on the other worker, writes for real

    result = await fleet.result_of(handle, timeout=120)
    [step] = result.steps
    assert (step.status, step.observation) == ("ok", f"wrote 2 bytes to {label}.txt"), step
    assert (workspace / f"{label}.txt").read_text() == "ok"
    assert await attempts_of(handle, "write_file") == [2]  # the first attempt died with its worker


def test_a_dead_worker_is_noticed_by_its_heartbeat_before_the_attempt_times_out() -> None:
    """The heartbeat timeout a tool is scheduled with is at most half its attempt limit (an
    attempt's start-to-close timeout is not retried; a missed heartbeat is)."""
    write = ToolOptions(start_to_close_timeout=timedelta(seconds=10))  # write_file's
    assert write.lost_worker_timeout == timedelta(seconds=5)
    long = ToolOptions(start_to_close_timeout=timedelta(seconds=60))
    assert long.lost_worker_timeout == long.heartbeat_timeout == timedelta(seconds=10)
    own = ToolOptions(heartbeat_timeout=timedelta(seconds=2))
    assert own.lost_worker_timeout == timedelta(seconds=2)
