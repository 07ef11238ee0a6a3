"""SIGTERM / SIGINT (Ctrl-C) stop `python worker.py` gracefully: in-flight activities get
WORKER_DRAIN_SECONDS to finish, the process exits 0, and the interrupted runs complete on the next
worker without redoing what finished during the drain.

The exit code is checked on every shutdown: the SDK can crash at interpreter exit
(`Fatal Python error: PyGILState_Release`, sdk-python#300) after a clean shutdown, which
worker.py avoids by leaving through os._exit.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from testkit.crash_tools import (
    WorkerCluster,
    WorkerProcess,
    attempts_of,
    counts,
    recorded,
    release,
)
from testkit.eventually import eventually

DRAIN_MARKER = "stopping: draining in-flight work"


@pytest.fixture
async def cluster(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> AsyncIterator[WorkerCluster]:
    cluster = WorkerCluster(temporal_env.client, fake_model.base_url, tmp_path, drain_seconds=10)
    try:
        yield cluster
    finally:
        await cluster.close()


def assert_clean_exit(worker: WorkerProcess, code: int) -> None:
    output = worker.output()
    assert code == 0, f"worker exited with {code}:\n{output}"
    assert DRAIN_MARKER in output, output
    assert "Fatal Python error" not in output, output


async def test_signals_drain_in_flight_tools_then_exit_0(
    cluster: WorkerCluster, fake_model: FakeOpenAIServer
) -> None:
    """Four shutdowns in a row, alternating SIGTERM and SIGINT, each with a tool in flight (held
    until the drain has begun); the next worker finishes the run that the previous one was
    working on."""
    worker = await cluster.start_worker()
    signals = [signal.SIGTERM, signal.SIGINT, signal.SIGTERM, signal.SIGINT]
    for i, sig in enumerate(signals):
        fake_model.enqueue(
            fake.tool_calls(
                fake.call(
                    "crash_effect", {"label": f"run {i}", "hold_until_released": True}, id=f"c{i}"
                )
            ),
            fake.text(f"answer {i}"),
        )
        handle = await cluster.start_run({"prompt": f"drain {i}", "tools": ["crash_effect"]})
        key = f"{handle.id}/1/c{i}"
        await eventually(recorded(cluster.records, key, "effect"), what="the effect")
        assert "finish" not in counts(cluster.records, key)  # the tool is in flight

        worker.send(sig)
        await worker.wait_for_output(DRAIN_MARKER, 30)  # the drain began with the tool in flight
        release(cluster.records, key)
        code = await worker.wait(30)
        assert_clean_exit(worker, code)
        # The tool finished inside the drain, before the process exited.
        assert counts(cluster.records, key) == {"start": 1, "effect": 1, "finish": 1}

        worker = await cluster.start_worker()
        result = await cluster.result_of(handle)
        assert result.answer == f"answer {i}"
        assert [s.observation for s in result.steps] == [f"did run {i}"]
        # Nothing ran again: the drained activity's result was kept.
        assert counts(cluster.records, key) == {"start": 1, "effect": 1, "finish": 1}
        assert await attempts_of(handle, "crash_effect") == [1]

    assert_clean_exit(worker, await worker.stop(signal.SIGTERM, timeout=30))
    assert fake_model.request_count == 2 * len(signals)
    assert fake_model.errors == []


async def test_a_tool_longer_than_the_drain_is_cancelled_and_retried(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> None:
    """WORKER_DRAIN_SECONDS=1 and a tool that holds for 60 s after its effect: the worker cancels
    it after the drain, still exits 0, and the retry on the next worker skips the done effect."""
    cluster = WorkerCluster(temporal_env.client, fake_model.base_url, tmp_path, drain_seconds=1)
    try:
        fake_model.enqueue(
            fake.tool_calls(
                fake.call("crash_effect", {"label": "long", "hold_after": 60}, id="c1")
            ),
            fake.text("finished elsewhere"),
        )
        worker = await cluster.start_worker()
        handle = await cluster.start_run({"prompt": "too long to drain", "tools": ["crash_effect"]})
        key = f"{handle.id}/1/c1"
        await eventually(recorded(cluster.records, key, "effect"), what="the effect")

        code = await worker.stop(signal.SIGTERM, timeout=30)
        assert_clean_exit(worker, code)
        assert "finish" not in counts(cluster.records, key)  # cut short by the drain limit

        await cluster.start_worker()
        result = await cluster.result_of(handle)
        assert result.answer == "finished elsewhere"
        assert [(s.status, s.observation) for s in result.steps] == [("ok", "did long")]
        assert counts(cluster.records, key) == {"start": 2, "effect": 1, "skip": 1, "finish": 1}
        assert await attempts_of(handle, "crash_effect") == [2]
    finally:
        await cluster.close()


async def test_idle_workers_exit_0_on_every_signal(cluster: WorkerCluster) -> None:
    """Start and stop an idle worker several times: exit code 0 every time."""
    for sig in [signal.SIGTERM, signal.SIGINT] * 3:
        worker = await cluster.start_worker()
        code = await worker.stop(sig, timeout=30)
        assert_clean_exit(worker, code)
