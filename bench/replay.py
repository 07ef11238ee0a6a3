"""Target 5: replaying a recorded 100-turn run history with `Replayer` takes under 1 s.

The history is recorded by the benchmark itself (a run of target 1's workload with 100 turns:
1 model call + 2 calculator calls each), written to `bench/results/`, then replayed in this
process with a fresh `Replayer` each time: the first replay (cold: the sandbox imports the
workflow modules for the first time) and the median of the next ones are reported.
"""

from __future__ import annotations

import time
from pathlib import Path
from statistics import median
from typing import Any

from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_agents.runtime.workers import WorkerTuning, build_replayer
from durable_agents.tools.catalog import CATALOG

MAX_SECONDS = 1.0


async def record(client: Client, workflow_id: str, path: Path) -> WorkflowHistory:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    path.write_text(history.to_json())
    return history


async def replay_times(
    kind: str, history: WorkflowHistory, repeats: int = 4, tuning: dict[str, Any] | None = None
) -> list[float]:
    if kind == "naive":
        from bench.naive_workflow import NAIVE_WORKFLOWS

        workflows: list[type] = list(NAIVE_WORKFLOWS)
        options: dict[str, Any] = {}
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
        started = time.perf_counter()
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        times.append(time.perf_counter() - started)
        if result.replay_failure is not None:
            raise RuntimeError(f"{kind}: replay failed: {result.replay_failure}")
    return times


def summary(kind: str, events: int, times: list[float]) -> dict[str, Any]:
    warm = median(times[1:]) if len(times) > 1 else times[0]
    return {
        "kind": kind,
        "events": events,
        "cold_seconds": round(times[0], 3),
        "warm_median_seconds": round(warm, 3),
        "samples": [round(t, 3) for t in times],
        "passed": max(times[0], warm) < MAX_SECONDS,
    }
