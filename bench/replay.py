"""Target 5: replaying a recorded 100-turn run history with `Replayer` takes under 1 s.

The history is recorded by the benchmark itself (a run of target 1's workload with 100 turns:
1 model call + 2 calculator calls each), written to `bench/results/`, then replayed in this
process with a fresh `Replayer` each time: the first replay (cold: the sandbox imports the
workflow modules for the first time) and the median of the next ones are reported.

The target is wall time. On shared cores that counts the time the process waited for one, so
each replay's CPU time (the process's, every thread: the sandboxed workflow code and the SDK's
core) is recorded beside it: the replay's own cost, which bounds the wall time from below.
"""

from __future__ import annotations

import time
from pathlib import Path
from statistics import median
from typing import Any

from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_agents.runtime.workers import REPLAY_BUILD_ID, WorkerTuning, build_replayer
from durable_agents.tools.catalog import CATALOG

MAX_SECONDS = 1.0


async def record(client: Client, workflow_id: str, path: Path) -> WorkflowHistory:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    path.write_text(history.to_json())
    return history


async def replay_times(
    kind: str,
    history: WorkflowHistory,
    repeats: int = 4,
    tuning: dict[str, Any] | None = None,
    cpu: list[float] | None = None,
) -> list[float]:
    """Wall seconds of `repeats` replays, each by a fresh `Replayer`; with `cpu`, each one's
    process CPU seconds appended to it."""
    if kind == "naive":
        from bench.naive_workflow import NAIVE_WORKFLOWS

        workflows: list[type] = list(NAIVE_WORKFLOWS)
        options: dict[str, Any] = {"build_id": REPLAY_BUILD_ID}  # (ours' too: no module hash)
    else:
        workflows = []  # ours: build_replayer's, with the worker's interceptors and catalog
        runner = WorkerTuning(**(tuning or {})).worker_options().get("workflow_runner")
        options = {"workflow_runner": runner} if runner is not None else {}
    times = []
    for _ in range(repeats):
        replayer = (
            Replayer(workflows=workflows, data_converter=pydantic_data_converter, **options)
            if workflows
            else build_replayer(CATALOG, **options)
        )
        started, cpu_started = time.perf_counter(), time.process_time()
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        times.append(time.perf_counter() - started)
        if cpu is not None:
            cpu.append(time.process_time() - cpu_started)
        if result.replay_failure is not None:
            raise RuntimeError(f"{kind}: replay failed: {result.replay_failure}")
    return times


def cold_and_warm(times: list[float]) -> tuple[float, float]:
    """The first replay's time and the median of the others'."""
    return times[0], median(times[1:]) if len(times) > 1 else times[0]


def summary(
    kind: str, events: int, times: list[float], cpu: list[float] | None = None
) -> dict[str, Any]:
    """What `5_replay.json` keeps of one side's replays; judged on wall time (`MAX_SECONDS`)."""
    cold, warm = cold_and_warm(times)
    result = {
        "kind": kind,
        "events": events,
        "cold_seconds": round(cold, 3),
        "warm_median_seconds": round(warm, 3),
        "samples": [round(t, 3) for t in times],
        "passed": max(cold, warm) < MAX_SECONDS,
    }
    if cpu:
        cold_cpu, warm_cpu = cold_and_warm(cpu)
        result |= {
            "cold_cpu_seconds": round(cold_cpu, 3),
            "warm_median_cpu_seconds": round(warm_cpu, 3),
            "cpu_samples": [round(t, 3) for t in cpu],
        }
    return result
