"""Several workers on one task queue (issue 21, docs/fleet.md): cache affinity measured.

    python -m bench.fleet [--quick] [--runs N] [--workers N] [--no-baseline] [--fast-transfer-queue]

On a dev server that does not hand activities back to the worker that scheduled them (eager
dispatch off: the plain server's default, and nothing else changed on it; `--fast-transfer-queue`
also polls the server's transfer queue at 1000/s, as this bench did before issue 38), with
`python worker.py` processes at their default settings (no `AGENT_*` variable reaches them but
what a case names) against the zero-latency fake model:

1. one worker, a burst of N three-turn runs (`[calc 2]`: 3 model calls each): history bytes per
   turn, the reference;
2. the same burst on 3 workers with their default settings (cache affinity `auto`, which sees
   the server dispatch without eagerness): the share of model calls that are resends (a
   context-cache miss, then the whole conversation again), history bytes per turn against the
   one-worker figure, all complete; optionally (`baseline`) the same with
   `AGENT_CACHE_AFFINITY=off`;
3. 3 workers, N runs that each ask to `write_file` and are approved as they wait, by call id and
   digest (never `*`, which is not kept for a call not shown yet: docs/fleet.md); one worker is
   SIGKILLed a third of the way in: every run completes, the files written are exactly the ones
   approved, each with its content, each run ran exactly one `write_file` call (read from its
   history, so a second call writing the same bytes would count as a duplicate; a retried
   attempt of that one call is counted apart: it rewrites the same bytes under the same
   idempotency key), and no model call waited on the dead worker's queue
   longer than the schedule-to-start fallback when scheduled after it was gone, or than its
   heartbeat timeout + the retry interval + the fallback (from the kill) when the dead worker
   had taken it (a second of timer slack each).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle

from bench.harness import bench_stack, print_result
from bench.report import Row
from durable_agents.workflows.model_gateway import AFFINITY_FALLBACK, MODEL_HEARTBEAT_TIMEOUT
from testkit.crash_tools import WorkerCluster, attempts_of
from testkit.fleet_history import ModelCallRoute, model_call_routes

NO_EAGER = ["--dynamic-config-value", "system.enableActivityEagerExecution=false"]
FAST_TRANSFER_QUEUE = ["--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000"]
TURNS = 3
WRITE_TOOL = "write_file"
MAX_RESEND_SHARE = 0.05
MAX_BYTES_RATIO = 1.05
"""History per run (so per turn) on 3 workers against 1 (issue 38; issue 21 allowed 1.10)."""
START_CONCURRENCY = 25


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] fleet: {text}", flush=True)


async def in_batches(items: Sequence[Any], size: int, call: Any) -> list[Any]:
    out: list[Any] = []
    for start in range(0, len(items), size):
        out += await asyncio.gather(*(call(item) for item in items[start : start + size]))
    return out


async def routes_of(handle: WorkflowHandle[Any, Any]) -> list[ModelCallRoute]:
    return model_call_routes((await handle.fetch_history()).events)


async def history_bytes(handle: WorkflowHandle[Any, Any]) -> int:
    return int((await handle.describe()).raw_description.workflow_execution_info.history_size_bytes)


async def calc_burst(cluster: WorkerCluster, runs: int) -> dict[str, Any]:
    """`runs` three-turn runs started at once: completions, resends, history bytes per turn."""
    started = time.monotonic()
    handles = await in_batches(
        range(runs),
        START_CONCURRENCY,
        lambda _: cluster.start_run({"prompt": "[calc 2] two rounds", "tools": ["calculator"]}),
    )
    results = await in_batches(handles, 50, lambda h: cluster.result_of(h, timeout=600))
    seconds = time.monotonic() - started
    routes = await in_batches(handles, 25, routes_of)
    sizes = await in_batches(handles, 25, history_bytes)
    calls = [c for run in routes for c in run]
    misses = sum(c.outcome == "miss" for c in calls)
    return {
        "runs": runs,
        "completed": sum(r.stop_reason == "completed" for r in results),
        "seconds": round(seconds, 1),
        "model_calls": len(calls),
        "resends": misses,
        "resend_share": round(misses / max(1, len(calls)), 4),
        "history_bytes_per_turn": round(sum(sizes) / (runs * TURNS)),
    }


async def fleet_of(
    client: Client, base_url: str, folder: Path, workers: int, extra: dict[str, str]
) -> WorkerCluster:
    env = {"MEMORY_DATABASE_PATH": str(folder / "memory.db"), "LOG_LEVEL": "WARNING", **extra}
    cluster = WorkerCluster(client, base_url, folder, extra_env=env)
    await asyncio.gather(*(cluster.start_worker() for _ in range(workers)))
    return cluster


async def approved_writes_with_a_kill(cluster: WorkerCluster, runs: int) -> dict[str, Any]:
    """`runs` runs that each write a file once approved; one worker SIGKILLed a third of the way
    through the approvals."""
    labels = [f"w{n}-{uuid.uuid4().hex[:6]}" for n in range(runs)]
    handles = await in_batches(
        labels,
        START_CONCURRENCY,
        lambda label: cluster.start_run(
            {"prompt": f"[approve {label}] write it", "tools": ["write_file"]}
        ),
    )
    victim = cluster.workers[-1]
    approved = 0
    killed_after: int | None = None
    killed_at: list[datetime] = []

    async def approve_when_waiting(handle: WorkflowHandle[Any, Any]) -> None:
        nonlocal approved, killed_after
        deadline = time.monotonic() + 300
        while not (pending := await handle.query("pending_approvals")):
            if time.monotonic() > deadline:
                raise AssertionError(f"{handle.id} never waited for approval")
            await asyncio.sleep(0.2)
        [request] = pending  # approved by call id and digest: what was shown, never `*`
        approval = {"call_id": request["call_id"], "args_digest": request["args_digest"]}
        await handle.signal("approve", {**approval, "by": "bench"})
        approved += 1
        if killed_after is None and approved >= runs // 3:
            killed_after = approved
            killed_at.append(datetime.now(UTC))
            await cluster.kill(victim)
            killed_at.append(datetime.now(UTC))  # reaped: its sockets are closed

    started = time.monotonic()
    await in_batches(handles, 50, approve_when_waiting)
    results = await in_batches(handles, 50, lambda h: cluster.result_of(h, timeout=600))
    seconds = time.monotonic() - started
    routes = [c for run in await in_batches(handles, 25, routes_of) for c in run]
    writes = await in_batches(handles, 25, lambda h: attempts_of(h, WRITE_TOOL))
    workspace = cluster.folder / "workspace"
    files = {p.name: p.read_text() for p in workspace.iterdir() if p.is_file()}
    expected = {f"{label}.txt" for label in labels}
    lost = [
        {"run": h.id, "steps": [(s.tool, s.status, s.observation) for s in r.steps]}
        for label, h, r in zip(labels, handles, results, strict=True)
        if f"{label}.txt" not in files
    ]
    # A call scheduled on the dead worker's queue after it was gone (reaped) waits there for
    # the fallback (judged from its scheduling). One that was on it before (running, handed to
    # its last poll, or queued) is judged from the kill: one it had taken first waits for its
    # heartbeat timeout (nothing notices a dead worker sooner), then its retry (1 s later)
    # waits the fallback.
    kill, gone_at = (killed_at[0], killed_at[-1]) if killed_at else (datetime.now(UTC),) * 2
    gone = [c for c in routes if c.outcome == "worker_gone"]
    after = [c.wait_seconds for c in gone if c.scheduled_at.replace(tzinfo=UTC) >= gone_at]
    during = [
        ((c.ended_at or c.scheduled_at).replace(tzinfo=UTC) - kill).total_seconds()
        for c in gone
        if c.scheduled_at.replace(tzinfo=UTC) < gone_at
    ]
    fallback = AFFINITY_FALLBACK.total_seconds()
    running_limit = MODEL_HEARTBEAT_TIMEOUT.total_seconds() + 1.0 + fallback
    return {
        "runs": runs,
        "killed_after_approvals": killed_after,
        "completed": sum(r.stop_reason == "completed" for r in results),
        "seconds": round(seconds, 1),
        "files": len(files),
        "unexpected_files": len(set(files) - expected),
        "wrong_content": sum(text != "ok" for text in files.values()),
        "lost_runs": lost,
        "runs_with_more_than_one_write": sum(len(attempts) > 1 for attempts in writes),
        "write_steps_per_run": sorted(
            {sum(s.tool == WRITE_TOOL for s in r.steps) for r in results}
        ),
        "write_attempts_retried": sum(a > 1 for attempts in writes for a in attempts),
        "fallbacks": len(gone),
        "fallback_s": fallback,
        "scheduled_after_kill": len(after),
        "longest_wait_scheduled_after_kill_s": round(max(after, default=0.0), 2),
        "on_killed_worker_at_kill": len(during),
        "taken_by_killed_worker": sum(seconds > fallback + 1.0 for seconds in during),
        "longest_from_kill_on_killed_worker_s": round(max(during, default=0.0), 2),
        "limit_running_at_kill_s": running_limit,
        "waits_within_fallback": max(after, default=0.0) <= fallback + 1.0
        and max(during, default=0.0) <= running_limit + 1.0,
    }


def duplicated(kill: dict[str, Any]) -> int:
    """Writes beyond the approved one: unexpected files, wrong contents, and runs that ran
    `write_file` more than once."""
    return int(
        kill["unexpected_files"] + kill["wrong_content"] + kill["runs_with_more_than_one_write"]
    )


async def measure(
    runs: int, workers: int, baseline: bool, fast_transfer_queue: bool = False
) -> dict[str, Any]:
    server_args = [*NO_EAGER, *(FAST_TRANSFER_QUEUE if fast_transfer_queue else [])]
    result: dict[str, Any] = {
        "runs": runs,
        "workers": workers,
        "turns": TURNS,
        "server_args": server_args,
    }
    async with bench_stack(server_args) as bench:
        base_url = bench.model.detail
        with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
            root = Path(tmp)
            cases: list[tuple[str, int, dict[str, str]]] = [
                ("one_worker", 1, {}),
                ("fleet", workers, {}),
            ]
            if baseline:
                cases.append(("fleet_no_affinity", workers, {"AGENT_CACHE_AFFINITY": "off"}))
            for name, count, extra in cases:
                say(f"{name}: {count} worker(s), {runs} three-turn runs at once")
                cluster = await fleet_of(bench.client, base_url, root / name, count, extra)
                try:
                    result[name] = await calc_burst(cluster, runs)
                finally:
                    await cluster.close()
            say(f"kill: {workers} workers, {runs} approved writes, one worker SIGKILLed")
            cluster = await fleet_of(bench.client, base_url, root / "kill", workers, {})
            try:
                result["kill"] = await approved_writes_with_a_kill(cluster, runs)
            finally:
                await cluster.close()
    one, fleet, kill = result["one_worker"], result["fleet"], result["kill"]
    kill["duplicated"] = duplicated(kill)
    ratio = fleet["history_bytes_per_turn"] / max(1, one["history_bytes_per_turn"])
    result["history_ratio"] = round(ratio, 3)
    result["passed"] = (
        fleet["completed"] == runs
        and fleet["resend_share"] <= MAX_RESEND_SHARE
        and ratio <= MAX_BYTES_RATIO
        and kill["completed"] == runs
        and not kill["lost_runs"]
        and kill["duplicated"] == 0
        and kill["waits_within_fallback"]
    )
    return result


def fleet_rows(result: dict[str, Any]) -> list[Row]:
    """The three-worker figures as rows of `make bench`'s table (the naive column: affinity
    off, when measured)."""
    fleet, kill = result["fleet"], result["kill"]
    off = result.get("fleet_no_affinity")
    workers = result["workers"]
    share = f"{fleet['resend_share']:.1%}"
    return [
        Row(
            f"8 {workers} workers, {fleet['runs']} runs: model calls resent",
            share,
            f"{off['resend_share']:.1%}" if off else "–",
            "–",
            "≤ 5%",
            fleet["resend_share"] <= MAX_RESEND_SHARE and fleet["completed"] == fleet["runs"],
        ),
        Row(
            f"8 {workers} workers: history bytes/turn vs 1 worker",
            f"{fleet['history_bytes_per_turn']} ({result['history_ratio']:.2f}x)",
            f"{off['history_bytes_per_turn']}" if off else "–",
            "–",
            f"≤ {MAX_BYTES_RATIO:.2f}x",
            result["history_ratio"] <= MAX_BYTES_RATIO,
        ),
        Row(
            f"8 1 of {workers} killed, {kill['runs']} approved writes: lost / duplicated",
            f"{len(kill['lost_runs'])} / {kill['duplicated']}",
            "–",
            "–",
            "0 / 0, waits ≤ fallback",
            kill["completed"] == kill["runs"]
            and not kill["lost_runs"]
            and not kill["duplicated"]
            and kill["waits_within_fallback"],
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="30 runs instead of 150")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--no-baseline", action="store_true", help="skip affinity off")
    parser.add_argument(
        "--fast-transfer-queue",
        action="store_true",
        help="also poll the server's transfer queue at 1000/s (this bench's server before #38)",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the result JSON here")
    args = parser.parse_args(argv)
    runs = args.runs or (30 if args.quick else 150)
    result = asyncio.run(
        measure(runs, args.workers, not args.no_baseline, args.fast_transfer_queue)
    )
    return print_result(result, args.out)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # (the SDK's occasional crash at interpreter exit: stack notes)
