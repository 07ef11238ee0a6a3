"""Target 4: many runs waiting for an approval on one worker, then approved.

N runs (1,000; `--quick`: 200) each ask for `write_file`, which needs approval, and wait. Once
every one waits (no pending workflow task or activity), the worker's RSS is read: with the SDK's
default sticky cache of 1,000 runs, all of them are in it (`cached` in the result says how many
could be). Then each run gets one `approve` signal, sent at a steady rate, and the time from the
signal to the run's completion is read from its history (the server's timestamps of
`WorkflowExecutionSignaled` and `WorkflowExecutionCompleted`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from bench.harness import Bench

START_CONCURRENCY = 50
MAX_RSS_MB = 300
MAX_P99_SECONDS = 2.0


async def in_batches(items: list[Any], size: int, call: Any) -> list[Any]:
    out: list[Any] = []
    for start in range(0, len(items), size):
        out += await asyncio.gather(*(call(item) for item in items[start : start + size]))
    return out


async def start_waiting(client: Client, kind: str, queue: str, n: int) -> WorkflowHandle[Any, Any]:
    workflow_id = f"wait-{kind}-{n}-{uuid.uuid4().hex[:8]}"
    prompt = f"[approve {workflow_id.replace('/', '-')}] Write the file."
    if kind == "naive":
        payload: dict[str, Any] = {"prompt": prompt, "tools": ["write_file"], "max_turns": 3}
        return await client.start_workflow(
            "NaiveAgentWorkflow", payload, id=workflow_id, task_queue=queue
        )
    payload = {"prompt": prompt, "tools": ["write_file"], "max_iterations": 3}
    return await client.start_workflow("AgentWorkflow", payload, id=workflow_id, task_queue=queue)


async def is_waiting(handle: WorkflowHandle[Any, Any]) -> bool:
    """Its model call is done and nothing is pending: it waits for the signal."""
    raw = (await handle.describe()).raw_description
    return (
        raw.workflow_execution_info.history_length > 8
        and not raw.pending_activities
        and not raw.HasField("pending_workflow_task")
    )


async def wait_until_all_wait(handles: list[WorkflowHandle[Any, Any]], timeout: float) -> int:
    pending = list(handles)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        waiting = await in_batches(pending, 100, is_waiting)
        pending = [h for h, ok in zip(pending, waiting, strict=True) if not ok]
        if pending:
            await asyncio.sleep(1.0)
    return len(handles) - len(pending)


async def signal_to_completion(handle: WorkflowHandle[Any, Any]) -> float | None:
    signaled = completed = None
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            signaled = event.event_time.ToDatetime()
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            completed = event.event_time.ToDatetime()
    if signaled is None or completed is None:
        return None
    return (completed - signaled).total_seconds()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


async def measure(
    bench: Bench, kind: str, tuning: dict[str, Any] | None, runs: int, rate: float
) -> dict[str, Any]:
    """Start `runs` waiting runs on a fresh worker, read its RSS, approve them at `rate`/s."""
    proc, queue = bench.worker(kind, tuning)
    client = bench.client
    rss_idle = proc.rss()
    started = time.monotonic()
    handles = await in_batches(
        list(range(runs)), START_CONCURRENCY, lambda n: start_waiting(client, kind, queue, n)
    )
    waiting = await wait_until_all_wait(handles, timeout=60 + runs * 0.2)
    to_wait = time.monotonic() - started
    await asyncio.sleep(2.0)  # let the worker settle
    rss_waiting = proc.rss()
    signal_arg: Any = {"call_id": "*"} if kind == "ours" else "*"
    started = time.monotonic()
    sends = []
    for index, handle in enumerate(handles):
        delay = started + index / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        sends.append(asyncio.ensure_future(handle.signal("approve", signal_arg)))
    await asyncio.gather(*sends)
    await in_batches(handles, 200, lambda h: h.result())
    to_done = time.monotonic() - started
    rss_after = proc.rss()
    latencies = [v for v in await in_batches(handles, 100, signal_to_completion) if v is not None]
    bench.stop_worker(proc)
    p50 = percentile(latencies, 50) if latencies else None
    p99 = percentile(latencies, 99) if latencies else None
    cache = (tuning or {}).get("max_cached_workflows", 1000) if kind == "ours" else 1000
    rss_mb = rss_waiting / 1e6
    return {
        "kind": kind,
        "runs": runs,
        "waiting": waiting,
        "sticky_cache_size": cache,
        "cached": min(cache, waiting),
        "seconds_to_all_waiting": round(to_wait, 1),
        "rss_idle_mb": round(rss_idle / 1e6, 1),
        "rss_waiting_mb": round(rss_mb, 1),
        "rss_per_waiting_run_kb": round((rss_waiting - rss_idle) / max(1, waiting) / 1e3, 1),
        "rss_after_mb": round(rss_after / 1e6, 1),
        "signal_rate_per_second": rate,
        "completed": len(latencies),
        "seconds_signals_to_all_done": round(to_done, 1),
        "p50_signal_to_completion_s": round(p50, 3) if p50 is not None else None,
        "p99_signal_to_completion_s": round(p99, 3) if p99 is not None else None,
        "max_signal_to_completion_s": round(max(latencies), 3) if latencies else None,
        "passed": waiting == runs
        and len(latencies) == runs
        and rss_mb <= MAX_RSS_MB
        and p99 is not None
        and p99 < MAX_P99_SECONDS,
    }
