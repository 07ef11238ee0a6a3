"""Target 4: many runs waiting for an approval on one worker, then approved.

N runs (1,000; `--quick`: 200) each ask for `write_file`, which needs approval, and wait. Once
every one waits (no pending workflow task or activity), the worker's RSS is read: with the SDK's
default sticky cache of 1,000 runs, all of them are in it (`cached` in the result says how many
could be). Then each run gets one `approve` signal, sent at a steady rate, and the time from the
signal to the run's completion is read from its history (the server's timestamps of
`WorkflowExecutionSignaled` and `WorkflowExecutionCompleted`).

`scale` (issue 21, target 9; `python -m bench.waiting --runs 10000`): N runs (10,000) waiting on
one worker of ours, its RSS (with the default sticky cache of 1,000 the rest are evicted: an
approval of an evicted run replays its short history first), then the first half approved at 25
a second (open loop) and the second half with 40 approvals in flight at once (closed loop: each
of 40 senders approves a run, waits for its result, takes the next). Each approval names the
call and its digest as `pending_approvals` shows them, read from each run's history once all
wait, before the timed phases (`*` is never kept for calls not shown yet, docs/fleet.md; a query
of an evicted run would make the worker replay it). The CPU each process used in each phase
(worker, Temporal server, this client, the fake model) says what bounds it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import psutil
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from bench.fleet import FAST_TRANSFER_QUEUE
from bench.harness import Bench, Proc, bench_stack, print_result
from bench.report import Row
from durable_agents.tools.builtin.write_file import WriteFileArgs
from testkit.fleet_history import shown_approval

START_CONCURRENCY = 50
MAX_RSS_MB = 300
MAX_P99_SECONDS = 2.0
SCALE_RUNS = 10_000
MAX_SCALE_RSS_MB = 1000
SIGNAL_RATE = 25.0
IN_FLIGHT = 40


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


async def paced(
    handles: list[WorkflowHandle[Any, Any]],
    rate: float,
    send: Callable[[WorkflowHandle[Any, Any]], Awaitable[Any]],
) -> None:
    """`send` to each run in turn, one every 1/`rate` s from now, whatever the earlier sends are
    doing (an open loop); returns once every send is done."""
    started = time.monotonic()
    sends = []
    for index, handle in enumerate(handles):
        delay = started + index / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        sends.append(asyncio.ensure_future(send(handle)))
    await asyncio.gather(*sends)


async def wait_until_all_wait(
    handles: list[WorkflowHandle[Any, Any]], timeout: float, stall: float | None = None
) -> int:
    """How many of `handles` wait for their approval, once all do, after `timeout`, or once
    (with `stall`) for `stall` seconds no further run came to wait."""
    pending = list(handles)
    deadline = time.monotonic() + timeout
    moved = time.monotonic()
    while pending and time.monotonic() < deadline:
        waiting = await in_batches(pending, 100, is_waiting)
        still = [h for h, ok in zip(pending, waiting, strict=True) if not ok]
        if len(still) < len(pending):
            moved = time.monotonic()
        pending = still
        if pending and stall is not None and time.monotonic() - moved > stall:
            break
        if pending:
            await asyncio.sleep(1.0)
    return len(handles) - len(pending)


async def wait_for_results(
    handles: list[WorkflowHandle[Any, Any]], timeout: float, stall: float | None = None
) -> int:
    """Wait for the runs' results: all of them, until `timeout`, or (with `stall`) until for
    `stall` seconds no further run finished. A run that never finishes counts as not completed;
    it does not hang the benchmark. Returns how many finished."""
    polls = asyncio.Semaphore(200)  # (at most 200 result polls open at once)

    async def result(handle: WorkflowHandle[Any, Any]) -> Any:
        async with polls:
            return await handle.result()

    tasks = [asyncio.ensure_future(result(handle)) for handle in handles]
    deadline = time.monotonic() + timeout
    done: set[asyncio.Future[Any]] = set()
    pending: set[asyncio.Future[Any]] = set(tasks)
    while pending:
        wait = deadline - time.monotonic()
        if stall is not None:
            wait = min(wait, stall)
        if wait <= 0:
            break
        finished, pending = await asyncio.wait(pending, timeout=wait)
        if not finished:
            break  # (no run finished for `stall` seconds, or the deadline came)
        done |= finished
    for task in pending:
        task.cancel()
    return sum(1 for task in done if not task.cancelled() and task.exception() is None)


async def signal_to_completion(
    handle: WorkflowHandle[Any, Any], names: Sequence[str] = ("approve",)
) -> float | None:
    """Seconds from the first approval (a signal or an accepted update named in `names`) to
    the run's completion, by the server's timestamps."""
    signaled = completed = None
    async for event in handle.fetch_history_events():
        if signaled is None and approval_name(event) in names:
            signaled = event.event_time.ToDatetime()
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            completed = event.event_time.ToDatetime()
    if signaled is None or completed is None:
        return None
    return (completed - signaled).total_seconds()


def approval_name(event: Any) -> str | None:
    """The name of the signal or accepted update an event records, if it records one."""
    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
        return str(event.workflow_execution_signaled_event_attributes.signal_name)
    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
        attrs = event.workflow_execution_update_accepted_event_attributes
        return str(attrs.accepted_request.input.name)
    return None


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


async def measure(
    bench: Bench,
    kind: str,
    tuning: dict[str, Any] | None,
    runs: int,
    rate: float,
    *,
    worker: tuple[Proc, str] | None = None,
    start: Callable[[int], Awaitable[WorkflowHandle[Any, Any]]] | None = None,
    approve: Callable[[WorkflowHandle[Any, Any]], Awaitable[Any]] | None = None,
    approval_names: Sequence[str] = ("approve",),
    stall: float | None = None,
) -> dict[str, Any]:
    """Start `runs` waiting runs on a fresh worker, read its RSS, approve them at `rate`/s.
    `worker`, `start`, `approve` and `approval_names`: another system's fresh worker, how a
    waiting run starts on it, how one is approved and what its history names the approval
    (`bench.peers`); by default ours or naive, approved by an `approve` signal. `stall`: stop
    waiting (for runs to wait, then to finish) once for that many seconds no run moved,
    instead of at the size's timeout; the result says how many waited and finished."""
    proc, queue = worker or bench.worker(kind, tuning)
    client = bench.client
    rss_idle = proc.rss()
    started = time.monotonic()
    handles = await in_batches(
        list(range(runs)),
        START_CONCURRENCY,
        lambda n: start(n) if start else start_waiting(client, kind, queue, n),
    )
    waiting = await wait_until_all_wait(handles, timeout=60 + runs * 0.2, stall=stall)
    to_wait = time.monotonic() - started
    await asyncio.sleep(2.0)  # let the worker settle
    rss_waiting = proc.rss()
    signal_arg: Any = {"call_id": "*"} if kind == "ours" else "*"
    meter = CpuMeter({"worker": proc.ps, "server": server_process()})
    meter.start()
    started = time.monotonic()
    await paced(
        handles,
        rate,
        lambda h: approve(h) if approve else h.signal("approve", signal_arg),
    )
    await wait_for_results(handles, 60 + runs * 0.2, stall)
    to_done = time.monotonic() - started
    approving = meter.stop(per=max(1, waiting))
    rss_after = proc.rss()
    latencies = [
        v
        for v in await in_batches(handles, 100, lambda h: signal_to_completion(h, approval_names))
        if v is not None
    ]
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
        **approving,
        "p50_signal_to_completion_s": round(p50, 3) if p50 is not None else None,
        "p99_signal_to_completion_s": round(p99, 3) if p99 is not None else None,
        "max_signal_to_completion_s": round(max(latencies), 3) if latencies else None,
        "passed": waiting == runs
        and len(latencies) == runs
        and rss_mb <= MAX_RSS_MB
        and p99 is not None
        and p99 < MAX_P99_SECONDS,
    }


# -- scale: 10,000 waiting on one worker (issue 21) ---------------------------------------------


def server_process() -> psutil.Process | None:
    """The Temporal dev server this process started (`bench_stack`)."""
    found = [p for p in psutil.Process().children(recursive=True) if p.name() == "temporal"]
    return found[0] if found else None


def cpu_of(process: psutil.Process | None) -> float:
    if process is None:
        return 0.0
    times = process.cpu_times()
    return float(times.user + times.system)


class CpuMeter:
    """CPU seconds each process used between `start` and `stop`, as cores busy over the wall."""

    def __init__(self, processes: dict[str, psutil.Process | None]) -> None:
        self._processes = processes
        self._start: dict[str, float] = {}
        self._wall = 0.0

    def start(self) -> None:
        self._start = {name: cpu_of(p) for name, p in self._processes.items()}
        self._wall = time.monotonic()

    def stop(self, per: int = 0) -> dict[str, float]:
        """Cores each process kept busy; with `per`, also its CPU milliseconds per item."""
        wall = max(1e-6, time.monotonic() - self._wall)
        used = {name: cpu_of(p) - self._start[name] for name, p in self._processes.items()}
        cores = {f"{name}_cores": round(seconds / wall, 2) for name, seconds in used.items()}
        if not per:
            return cores
        return cores | {f"{name}_cpu_ms_each": round(s * 1e3 / per, 1) for name, s in used.items()}


Shown = dict[str, dict[str, str]]
"""The approval each run waits for (`{"call_id", "args_digest"}`), by workflow id."""


async def shown_of(handles: list[WorkflowHandle[Any, Any]]) -> Shown:
    """What `pending_approvals` shows for each waiting run's `write_file` call, read from its
    history once every run waits (before the timed phases; a query would make the worker replay
    every evicted run)."""

    async def one(handle: WorkflowHandle[Any, Any]) -> tuple[str, dict[str, str]]:
        events = (await handle.fetch_history()).events
        return handle.id, shown_approval(events, "write_file", WriteFileArgs)

    return dict(await in_batches(handles, 100, one))


async def approve_shown(handle: WorkflowHandle[Any, Any], shown: Shown) -> None:
    """Approve the run's pending call by its id and digest, as shown."""
    await handle.signal("approve", {**shown[handle.id], "by": "bench"})


async def open_loop(handles: list[WorkflowHandle[Any, Any]], shown: Shown, rate: float) -> None:
    """One approval every 1/`rate` s, whatever the earlier ones are doing; then every result."""
    await paced(handles, rate, lambda h: approve_shown(h, shown))
    await in_batches(handles, 200, lambda h: h.result())


async def closed_loop(
    handles: list[WorkflowHandle[Any, Any]], shown: Shown, in_flight: int
) -> None:
    """`in_flight` senders, each approving a run and waiting for its result before the next."""
    queue = list(reversed(handles))

    async def sender() -> None:
        while queue:
            handle = queue.pop()
            await approve_shown(handle, shown)
            await handle.result()

    await asyncio.gather(*(sender() for _ in range(in_flight)))


async def approval_phase(
    handles: list[WorkflowHandle[Any, Any]], meter: CpuMeter, run: Awaitable[None]
) -> dict[str, Any]:
    meter.start()
    started = time.monotonic()
    await run
    seconds = time.monotonic() - started
    cpu = meter.stop(per=len(handles))
    cores = {name: value for name, value in cpu.items() if name.endswith("_cores")}
    latencies = [v for v in await in_batches(handles, 100, signal_to_completion) if v is not None]
    p99 = percentile(latencies, 99) if latencies else None
    busiest = max(cores, key=lambda name: cores[name])
    return {
        "runs": len(handles),
        "completed": len(latencies),
        "seconds": round(seconds, 1),
        "approvals_per_second": round(len(handles) / max(seconds, 1e-6), 1),
        "p50_signal_to_completion_s": round(percentile(latencies, 50), 3) if latencies else None,
        "p99_signal_to_completion_s": round(p99, 3) if p99 is not None else None,
        "max_signal_to_completion_s": round(max(latencies), 3) if latencies else None,
        **cpu,
        "busiest": busiest.removesuffix("_cores"),
        "passed": len(latencies) == len(handles) and p99 is not None and p99 < MAX_P99_SECONDS,
    }


async def scale(
    bench: Bench,
    runs: int = SCALE_RUNS,
    tuning: dict[str, Any] | None = None,
    rate: float = SIGNAL_RATE,
    in_flight: int = IN_FLIGHT,
) -> dict[str, Any]:
    """`runs` waiting runs on one fresh worker of ours: RSS, then half approved at `rate`/s and
    half with `in_flight` approvals at once (see the module docstring)."""
    proc, queue = bench.worker("ours", tuning)
    meter = CpuMeter(
        {
            "worker": proc.ps,
            "server": server_process(),
            "client": psutil.Process(),
            "model": bench.model.ps,
        }
    )
    rss_idle = proc.rss()
    meter.start()
    started = time.monotonic()
    handles = await in_batches(
        list(range(runs)),
        START_CONCURRENCY,
        lambda n: start_waiting(bench.client, "ours", queue, n),
    )
    waiting = await wait_until_all_wait(handles, timeout=120 + runs * 0.2)
    to_wait = time.monotonic() - started
    starting = meter.stop()
    await asyncio.sleep(2.0)  # let the worker settle
    rss_waiting = proc.rss()
    cache = int((tuning or {}).get("max_cached_workflows", 1000))
    half = runs // 2
    shown = await shown_of(handles)
    paced = await approval_phase(handles[:half], meter, open_loop(handles[:half], shown, rate))
    paced["signal_rate_per_second"] = rate
    closed = await approval_phase(
        handles[half:], meter, closed_loop(handles[half:], shown, in_flight)
    )
    closed["in_flight"] = in_flight
    rss_after = proc.rss()
    bench.stop_worker(proc)
    rss_mb = rss_waiting / 1e6
    return {
        "runs": runs,
        "waiting": waiting,
        "seconds_to_all_waiting": round(to_wait, 1),
        "starting": starting,
        "sticky_cache_size": cache,
        "cached": min(cache, waiting),
        "evicted": max(0, waiting - cache),
        "rss_idle_mb": round(rss_idle / 1e6, 1),
        "rss_waiting_mb": round(rss_mb, 1),
        "rss_after_mb": round(rss_after / 1e6, 1),
        "open_loop": paced,
        "closed_loop": closed,
        "load_average_at_end": [round(v, 2) for v in os.getloadavg()],
        "passed": waiting == runs
        and rss_mb <= MAX_SCALE_RSS_MB
        and paced["passed"]
        and closed["passed"],
    }


def scale_rows(result: dict[str, Any]) -> list[Row]:
    """Target 9's rows of `make bench`'s table (ours only)."""
    paced, closed = result["open_loop"], result["closed_loop"]
    cached = f"{result['cached']} cached, {result['evicted']} evicted"
    return [
        Row(
            f"9 worker RSS, {result['runs']} waiting ({cached}) (MB)",
            f"{result['rss_waiting_mb']:.0f}",
            "–",
            "–",
            f"≤ {MAX_SCALE_RSS_MB} MB",
            result["waiting"] == result["runs"] and result["rss_waiting_mb"] <= MAX_SCALE_RSS_MB,
        ),
        Row(
            f"9 p99 signal → done, {paced['signal_rate_per_second']:g}/s (s; busiest: "
            f"{paced['busiest']})",
            f"{paced['p99_signal_to_completion_s']}",
            "–",
            "–",
            "< 2 s",
            paced["passed"],
        ),
        Row(
            f"9 p99 signal → done, {closed['in_flight']} in flight (s; "
            f"{closed['approvals_per_second']:g}/s, busiest: {closed['busiest']})",
            f"{closed['p99_signal_to_completion_s']}",
            "–",
            "–",
            "< 2 s",
            closed["passed"],
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.waiting", description=__doc__)
    parser.add_argument("--runs", type=int, default=SCALE_RUNS)
    parser.add_argument("--rate", type=float, default=SIGNAL_RATE)
    parser.add_argument("--in-flight", type=int, default=IN_FLIGHT)
    parser.add_argument("--tuning", default="{}", help="WorkerTuning fields, as JSON")
    parser.add_argument("--out", type=Path, default=None, help="write the result JSON here")
    args = parser.parse_args(argv)

    async def go() -> dict[str, Any]:
        async with bench_stack(FAST_TRANSFER_QUEUE) as bench:
            return await scale(bench, args.runs, json.loads(args.tuning), args.rate, args.in_flight)

    result = asyncio.run(go())
    return print_result(result, args.out)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # (the SDK's occasional crash at interpreter exit: stack notes)
