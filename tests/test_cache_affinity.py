"""Cache affinity decided from what the worker and the run observe (`AGENT_CACHE_AFFINITY=auto`,
the default; docs/fleet.md): on a server that dispatches activities eagerly (the tests' dev
server), a run's deltas go to the shared queue, which brings them back to the worker that holds
the conversation, until one is taken by another worker (a worker handed over or restarted in the
middle of the run): from then on they go to the holder's own queue. A miss on the holder itself
(its cache lost the conversation) does not switch. A server that does not dispatch eagerly is
tests/test_fleet.py's: there every reply asks for the worker's own queue from the first call.
"""

from __future__ import annotations

import json
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.cache_affinity import EagerDispatch, named_reply
from durable_agents.activities.context_cache import ContextCache
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.model_io import CALL_MODEL_ACTIVITY, ModelReply
from durable_agents.loop.cache_affinity import affinity_queue, missed_elsewhere
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from testkit.bench_model import rounds_since_user
from testkit.crash_tools import WorkerCluster
from tests.conftest import FAKE_MODEL, SECRET_API_KEY, started_workers
from tests.hitl_support import wait_for_pending
from tests.replaying import assert_replays

QUEUE_A = "agents@host-1-aaaaaa"
QUEUE_B = "agents@host-2-bbbbbb"
T0 = datetime(2026, 12, 5, tzinfo=UTC)


# -- the rules ------------------------------------------------------------------------------------


def observed(*gaps_ms: float) -> EagerDispatch:
    dispatch = EagerDispatch()
    for gap in gaps_ms:
        dispatch.observe(T0, T0 + timedelta(milliseconds=gap))
    return dispatch


def test_a_server_is_known_not_to_dispatch_eagerly_only_from_what_the_worker_saw() -> None:
    assert not observed().known_lazy  # nothing seen yet: assume it does, as a dev server
    assert not observed(0.02).known_lazy  # started as it was scheduled: eager
    assert observed(1.4).known_lazy  # through the transfer queue and a poll
    assert not observed(1.4, 6.0, 0.3).known_lazy  # one eager dispatch lately: it does
    assert observed(0.02, *[2.0] * EagerDispatch.WINDOW).known_lazy  # not lately


def test_a_reply_asks_for_the_workers_queue_when_affinity_is_on_or_the_server_is_lazy() -> None:
    reply = ModelReply(model="m")
    eager, lazy = observed(0.02), observed(3.0)
    assert named_reply(reply, QUEUE_A, "on", eager).worker_queue == QUEUE_A
    assert named_reply(reply, QUEUE_A, "auto", lazy).worker_queue == QUEUE_A
    auto = named_reply(reply, QUEUE_A, "auto", eager)
    assert (auto.worker_queue, auto.answered_by, auto.routable) == (None, QUEUE_A, True)
    off = named_reply(reply, QUEUE_A, "off", lazy)  # a name no one polls
    assert (off.worker_queue, off.answered_by, off.routable) == (None, QUEUE_A, False)
    assert named_reply(reply, None, "auto", lazy) == reply


def test_the_run_switches_after_a_delta_reached_another_worker() -> None:
    by_a = ModelReply(model="m", answered_by=QUEUE_A, routable=True)
    miss_on_b = ModelReply(model="", context_cache_miss=True, answered_by=QUEUE_B)
    miss_on_a = miss_on_b.model_copy(update={"answered_by": QUEUE_A})
    assert missed_elsewhere(5, miss_on_b, holder=QUEUE_A)
    assert not missed_elsewhere(5, miss_on_a, holder=QUEUE_A)  # its own cache lost it
    assert not missed_elsewhere(5, by_a, holder=QUEUE_A)
    assert not missed_elsewhere(0, by_a, holder=QUEUE_B)  # a whole conversation: anyone's
    legacy_miss = ModelReply(model="", context_cache_miss=True)  # names no worker
    assert missed_elsewhere(5, legacy_miss, holder=QUEUE_A)

    assert affinity_queue(by_a, missed=False) is None  # the shared queue: eager brings it back
    assert affinity_queue(by_a, missed=True) == QUEUE_A
    off = ModelReply(model="m", answered_by=QUEUE_A)  # affinity off: nothing polls that name
    assert affinity_queue(off, missed=True) is None
    asked = ModelReply(model="m", worker_queue=QUEUE_B)  # on, or a lazy server
    assert affinity_queue(asked, missed=False) == QUEUE_B


# -- through real workers -------------------------------------------------------------------------


def write_then_two_sums(body: dict[str, Any]) -> fake.ReplyLike:
    """A `write_file` call (it waits for approval), then two calculator rounds, then text."""
    _, rounds = rounds_since_user(body["messages"])
    if rounds == 0:
        return fake.tool_calls(fake.call("write_file", {"path": "handed.txt", "content": "ok"}))
    if rounds < 3:
        return fake.tool_calls(fake.call("calculator", {"expression": f"{rounds} * 17"}))
    return fake.text(f"done after {rounds} rounds")


PAYLOAD = {"prompt": "Write it, then add up.", "tools": ["write_file", "calculator"]}


@dataclass
class ModelCall:
    """One `call_model` activity as history shows it: its queue and its reply."""

    task_queue: str
    reply: dict[str, Any]

    @property
    def worker(self) -> str | None:
        return self.reply.get("worker_queue") or self.reply.get("answered_by")

    @property
    def missed(self) -> bool:
        return bool(self.reply.get("context_cache_miss"))


async def model_calls(handle: WorkflowHandle[Any, Any]) -> list[ModelCall]:
    queues: dict[int, str] = {}
    calls: list[ModelCall] = []
    for event in (await handle.fetch_history()).events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == CALL_MODEL_ACTIVITY:
                queues[event.event_id] = attrs.task_queue.name
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            done = event.activity_task_completed_event_attributes
            if done.scheduled_event_id in queues:
                reply = json.loads(done.result.payloads[0].data)
                calls.append(ModelCall(queues[done.scheduled_event_id], reply))
    return calls


async def waiting_run(
    client: Client, queue: str, prefix: str
) -> tuple[WorkflowHandle[Any, AgentResult], PendingRequest]:
    """A run of `PAYLOAD` started on `queue`, once it waits for its `write_file` approval."""
    handle = await client.start_workflow(
        "AgentWorkflow",
        PAYLOAD,
        id=f"{prefix}-{uuid.uuid4()}",
        task_queue=queue,
        result_type=AgentResult,
    )
    [request] = await wait_for_pending(handle)
    return handle, request


def assert_switched_after_the_miss(calls: list[ModelCall], shared: str) -> str:
    """The calls of a run whose worker changed while it waited for the approval: the first on
    the shared queue, answered by the first worker; the next (a delta) on the shared queue too,
    missed by the second; the whole conversation again on the shared queue; every later delta
    on the second worker's own queue, answered there. The second worker's queue."""
    first, miss, resent, *later = calls
    assert (first.task_queue, first.missed, first.reply.get("routable")) == (shared, False, True)
    assert "worker_queue" not in first.reply  # an eager server: the run decides
    assert (miss.task_queue, miss.missed) == (shared, True)
    assert miss.worker is not None and miss.worker != first.worker
    assert (resent.task_queue, resent.missed, resent.worker) == (shared, False, miss.worker)
    assert len(later) == 2, calls
    assert all(
        (c.task_queue, c.missed, c.worker) == (miss.worker, False, miss.worker) for c in later
    )
    return miss.worker


async def test_a_run_sends_its_deltas_to_the_holders_queue_once_one_missed_on_another_worker(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Worker A answers the first call and stops while the run waits for its approval; worker
    B (its own cache and queue, as a restarted worker's) takes the run from there."""
    fake_model.set_handler(write_then_two_sums)
    queue = f"agents-test-{uuid.uuid4()}"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    model = OpenAIChatModel(
        api_key=SECRET_API_KEY, base_url=fake_model.base_url, default_model=FAKE_MODEL
    )
    client = temporal_env.client
    async with AsyncExitStack() as a:
        await started_workers(a, client, model, workspace, queue, ContextCache())
        handle, request = await waiting_run(client, queue, "handover")
    async with AsyncExitStack() as b:  # (one process cannot run two workers on one queue)
        await started_workers(b, client, model, workspace, queue, ContextCache())
        await handle.signal("approve", {"call_id": request.call_id, "by": "test"})
        result = await handle.result()
    await model.close()
    assert (result.stop_reason, result.answer) == ("completed", "done after 3 rounds"), result
    assert (workspace / "handed.txt").read_text() == "ok"
    assert_switched_after_the_miss(await model_calls(handle), queue)
    last = fake_model.requests[-1]["messages"]  # the model got the whole conversation
    assert [m["role"] for m in last].count("tool") == 3, last
    await assert_replays(await handle.fetch_history())  # a run that switched replays


async def test_a_miss_on_the_holder_itself_does_not_switch(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The worker's cache loses the conversation while the run waits (as an eviction would):
    the next delta misses on the holder itself, which says nothing about the shared queue."""
    fake_model.set_handler(write_then_two_sums)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    model = OpenAIChatModel(
        api_key=SECRET_API_KEY, base_url=fake_model.base_url, default_model=FAKE_MODEL
    )
    cache = ContextCache()
    client = temporal_env.client
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, workspace, context_cache=cache)
        handle, request = await waiting_run(client, queue, "evicted")
        cache.clear()
        await handle.signal("approve", {"call_id": request.call_id, "by": "test"})
        result = await handle.result()
    await model.close()
    assert result.stop_reason == "completed", result
    calls = await model_calls(handle)
    assert [c.missed for c in calls] == [False, True, False, False, False]
    assert {c.task_queue for c in calls} == {queue}  # never the worker's own queue
    assert len({c.worker for c in calls}) == 1


@pytest.fixture
async def eager_cluster(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> Any:
    """`python worker.py` processes with their default settings on the tests' dev server."""
    fake_model.set_handler(write_then_two_sums)
    env = {"MEMORY_DATABASE_PATH": str(tmp_path / "memory.db"), "LOG_LEVEL": "INFO"}
    cluster = WorkerCluster(temporal_env.client, fake_model.base_url, tmp_path, extra_env=env)
    try:
        yield cluster
    finally:
        await cluster.close()


async def test_a_worker_killed_in_the_middle_of_a_run_is_replaced_and_the_run_switches(
    eager_cluster: WorkerCluster,
) -> None:
    cluster = eager_cluster
    first = await cluster.start_worker()
    handle = await cluster.start_run(PAYLOAD)
    [request] = await wait_for_pending(handle)
    await cluster.kill(first)
    second = await cluster.start_worker()
    await handle.signal("approve", {"call_id": request.call_id, "by": "test"})
    result = await cluster.result_of(handle, timeout=120)
    assert (result.stop_reason, result.answer) == ("completed", "done after 3 rounds"), result
    assert (cluster.folder / "workspace" / "handed.txt").read_text() == "ok"
    queue = assert_switched_after_the_miss(await model_calls(handle), cluster.task_queue)
    assert f"-{second.pid}-" in queue, (queue, second.pid)
    await assert_replays(await handle.fetch_history())
