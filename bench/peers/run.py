"""Issue 24: the five workloads on ours and on each real peer, side by side, in one run
(`make bench-peers`):

    python -m bench.peers.run [--quick] [--only 1,2,3,4,5,6] [--server tuned,defaults]
        [--model-url URL] [--out DIR]

1. per turn: 20-turn runs (1 model call + 2 parallel calculator calls a turn), wall and worker
   CPU per turn, medians of alternating runs (`bench.speed.per_turn`);
2. throughput: 200 concurrent 3-turn runs, one burst per system in turn (`bench.speed.throughput`;
   a burst that stops moving is given up, and the table says so: see `watched`);
3. a long conversation: one run of 100 model calls, each calling `fixed_output` (history bytes
   at calls 10/25/50/100, completes?, largest payload; `bench.peers.long_run`);
4. 1,000 runs waiting for an approval: worker RSS, p99 from approval to completion
   (`bench.waiting.measure`; given up like a burst when it stops moving);
5. replay of workload 3's recorded history (`bench.replay` for ours, the peer's own replayer
   in its venv for a peer);
6. the prompt cache (issue 36): a 30-step tool run and a 20-turn session on each system
   against `--model-url` (llama-server), each request metered from the server's answer
   (`bench.peers.cache`); without it, against the fake server acting as its cache, the quick
   cases (5 steps, 3 turns): a test of the plumbing.

The timing workloads (1, 2, 4) run twice: on the tuned server `make bench` uses
(`history.transferProcessorMaxPollRPS=1000`) and on the dev server's defaults; 1 and 2 also
run the peers with ours' levers switched on (`bench.peers.systems.LEVERS`), and ours with its
model calls as local activities (`model_call: local`, `OURS_MODES`) beside OpenAI Agents'
`use_local_activity=True`. A workload that
stalled on the first server is not run again on the second. Workloads 3, 5 and 6
measure bytes, a local replay and a model server's cache, so they run once (tuned server).
Everything else is `make bench`'s test bed (`bench.harness`): one in-memory dev server per
configuration, the fake model (`bench.fake_model`), every worker a process of its own. The
peers' venvs are made by `bench/peers/venvs.sh` if missing. Prints the table
(`bench.peers.report`); writes `peers.json` and `peers_history.png` under `--out` (default
`bench/results/`). `--quick`: small workloads, a smoke run of a few minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import temporalio
from temporalio.client import WorkflowHistory

from bench import replay, waiting
from bench.harness import Bench, Proc, bench_stack, quiet_logging
from bench.peers import cache, long_run, report
from bench.peers.systems import BASE, LEVERS, OURS_MODES, ROOT, System
from bench.peers.workers.common import model_env
from bench.run_all import FAST_TRANSFER_QUEUE, SIGNAL_RATE, save, say
from bench.speed import Side, one_run, per_turn, throughput

FULL = {"repeats": 5, "runs": 200, "calls": 100, "waiting": 1000}
QUICK = {"repeats": 2, "runs": 20, "calls": 50, "waiting": 30}
FULL |= {"cache_steps": 30, "cache_turns": 20}
QUICK |= {"cache_steps": 5, "cache_turns": 3}
"""Workload 6: the prompt cache's cases, as `bench.prompt_cache` runs them (quick: smaller)."""
STALL_SECONDS = 30
WAIT_STALL_SECONDS = 15
"""Workload 4 stops waiting for runs to wait, then to finish, once for this long none did: the
runs that did are measured (a run that never finishes is reported as not completed). It is
half of `STALL_SECONDS`, so `watched` gives up only a workload that hangs elsewhere (a start
that never returns), and the measuring after the wait (reading each run's history) has the
other half."""
SERVERS = {"tuned": FAST_TRANSFER_QUEUE, "defaults": []}
OURS_TUNING: dict[str, Any] = {}
"""Ours with its defaults on both servers: cache affinity `auto` sees the dev server dispatch
eagerly and leaves a run's calls on the shared queue (docs/fleet.md); before issue 38 this was
`cache_affinity: false`, which docs/fleet.md then recommended for a dev server with one
worker."""
NO_MODEL = "http://127.0.0.1:9/v1"
"""What a replayer's model client is built with: replay calls no model."""


def ensure_venvs() -> None:
    subprocess.run(["bash", str(ROOT / "bench" / "peers" / "venvs.sh"), sys.executable], check=True)


async def usable(bench: Bench, systems: Sequence[System], errors: dict[str, str]) -> list[Side]:
    """A worker and a warm-up run for each system; one that cannot start or run is left out of
    the timing workloads with its error (the table shows it)."""
    sides = []
    for system in systems:
        try:
            proc, queue = system.worker(bench)
            side = system.side(proc, queue)
            await asyncio.wait_for(one_run(bench.client, side, 2), timeout=120)
            sides.append(side)
        except Exception as error:
            errors[system.name] = f"{type(error).__name__}: {error}"[:300]
            say(f"  {system.name}: cannot run: {errors[system.name]}")
    return sides


Stalls = dict[tuple[int, str], str]
"""(workload, system) -> why that system's workload stalled on the first server."""


async def timing(
    bench: Bench,
    systems: Sequence[System],
    size: dict[str, int],
    only: set[int],
    stalls: Stalls,
) -> dict[str, Any]:
    errors: dict[str, str] = {}
    sides = await usable(bench, systems, errors)
    result: dict[str, Any] = {"errors": errors}
    if 1 in only and sides:
        say(f"  1 per turn: 20-turn runs, {size['repeats']} alternating runs each")
        result["per_turn"] = await per_turn(bench.client, sides, 20, size["repeats"])
    if 2 in only and sides:
        say(f"  2 throughput: {size['runs']} concurrent 3-turn runs each")
        result["throughput_errors"] = stalled = {}
        result["throughput"] = {"runs": size["runs"], "turns": 3, "repeats": 1}
        for side in sides:  # one burst each, in turn; a burst that stops moving is given up
            if (2, side.name) in stalls:
                stalled[side.name] = stalls[(2, side.name)]
                say(f"  {side.name}: not run again: {stalled[side.name]}")
                continue
            try:
                burst = await watched(
                    bench,
                    side.proc,
                    side.queue,
                    throughput(bench.client, [side], size["runs"], 3, 1),
                )
                result["throughput"][side.name] = burst[side.name]
            except Exception as error:
                stalled[side.name] = f"{type(error).__name__}: {error}"[:300]
                stalls[(2, side.name)] = f"on the first server: {stalled[side.name]}"
                say(f"  {side.name}: cannot run: {stalled[side.name]}")
    for side in sides:
        bench.stop_worker(side.proc)
    return result


class Stalled(Exception):
    """A workload stopped moving: no run finished and its worker did no work for a while."""


async def watched(
    bench: Bench, proc: Proc, queue: str, work: Awaitable[dict[str, Any]]
) -> dict[str, Any]:
    """`work` (a workload on `queue`, served by `proc`), given up once, for `STALL_SECONDS`,
    the number of runs on the queue has not changed (the server's count of running workflows:
    runs starting, runs finishing) and the worker has used under a second of CPU: every run
    may progress at once and finish late, but a worker that neither works nor moves a run is
    stuck."""
    task = asyncio.ensure_future(work)
    query = f"TaskQueue = '{queue}' AND ExecutionStatus = 'Running'"
    last, cpu, since = -1, proc.cpu(), time.monotonic()
    while not task.done():
        await asyncio.wait({task}, timeout=10)
        if task.done():
            break
        running = (await bench.client.count_workflows(query)).count
        if running != last or proc.cpu() - cpu > 1.0:
            last, cpu, since = running, proc.cpu(), time.monotonic()
        elif time.monotonic() - since > STALL_SECONDS:
            task.cancel()
            raise Stalled(
                f"stalled: {running} runs still running; for {STALL_SECONDS} s none started "
                "or finished and the worker used under 1 s of CPU"
            )
    return task.result()


async def long_and_replay(bench: Bench, size: dict[str, int], out: Path) -> dict[str, Any]:
    long: dict[str, Any] = {}
    replays: dict[str, Any] = {}
    for system in BASE:
        say(f"  3 long conversation: {system.name}, {size['calls']} model calls")
        try:
            proc, queue = system.worker(bench)
            path = out / f"peers_history_{system.venv or 'ours'}.json"
            long[system.name] = await long_run.measure(
                bench.client, system, queue, size["calls"], 2000, path
            )
            bench.stop_worker(proc)
        except Exception as error:
            long[system.name] = {"error": f"{type(error).__name__}: {error}"[:300]}
            continue
        say(f"  5 replay: {system.name}")
        try:
            replays[system.name] = await replay_one(system, long[system.name])
        except Exception as error:
            replays[system.name] = {"error": f"{type(error).__name__}: {error}"[:300]}
    return {"long": long, "replay": replays}


async def replay_one(system: System, recorded: dict[str, Any]) -> dict[str, Any]:
    if not recorded.get("history_file"):
        return {"error": "no single-run history recorded (workload 3 did not record one)"}
    path = Path(recorded["history_file"])
    if not system.peer:
        history = WorkflowHistory.from_json(recorded["workflow_id"], path.read_text())
        times = await replay.replay_times("ours", history)
        return replay.summary("ours", len(history.events), times)
    done = await asyncio.to_thread(
        subprocess.run,
        [
            system.python(),
            *("-m", "bench.peers.workers.replay_peer", "--worker", system.module),
            *("--history", str(path), "--workflow-id", recorded["workflow_id"]),
        ],
        cwd=str(ROOT),
        env={**os.environ, **model_env(NO_MODEL)},
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": f"replayer exited {done.returncode}: {done.stderr[-300:]}"}
    data = json.loads(lines[-1])
    if "error" in data:
        return {"events": data.get("events"), "error": str(data["error"])[:300]}
    return replay.summary(system.name, int(data["events"]), [float(t) for t in data["seconds"]])


async def waiting_all(
    bench: Bench, runs: int, result: dict[str, Any], saved: Callable[[], None], stalls: Stalls
) -> None:
    """Workload 4 on each system in turn, into `result`, saved after each one (a system whose
    workload 4 stalled on the first server is not run again)."""
    for system in BASE:
        if (4, system.name) in stalls:
            result[system.name] = {"error": f"not run again: {stalls[(4, system.name)]}"}
            say(f"  4 waiting: {system.name}: {result[system.name]['error']}")
            continue
        say(f"  4 waiting: {runs} runs on a fresh {system.name} worker")
        proc, queue = system.worker(bench)
        try:
            result[system.name] = await watched(
                bench, proc, queue, waiting_one(bench, system, runs, proc, queue)
            )
        except Exception as error:
            result[system.name] = {"error": f"{type(error).__name__}: {error}"[:300]}
            if isinstance(error, Stalled):
                stalls[(4, system.name)] = f"on the first server: {result[system.name]['error']}"
            bench.stop_worker(proc)
        saved()


async def waiting_one(
    bench: Bench, system: System, runs: int, proc: Proc, queue: str
) -> dict[str, Any]:

    async def start(n: int) -> Any:
        workflow_id = f"wait-{system.venv or 'ours'}-{n}-{uuid.uuid4().hex[:8]}"
        prompt = f"[approve {workflow_id}] Write the file."
        return await system.start(
            bench.client, queue, prompt, ["write_file"], 3, workflow_id, close=False
        )

    return await waiting.measure(
        bench,
        system.name,
        None,
        runs,
        SIGNAL_RATE,
        worker=(proc, queue),
        start=start,
        approve=system.approve,
        approval_names=system.approval_names,
        stall=WAIT_STALL_SECONDS,
    )


async def run(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    size = QUICK if args.quick else FULL
    only = {int(t) for t in args.only.split(",")}
    systems = {s.name: s.config for s in [*BASE, *OURS_MODES, *LEVERS]}
    results: dict[str, Any] = {"size": size, "systems": systems, "servers": {}}
    stalls: Stalls = {}
    for server in args.server.split(","):
        say(f"server: {server}")
        entry: dict[str, Any] = results["servers"].setdefault(server, {})
        async with bench_stack(SERVERS[server]) as bench:
            bench.ours_tuning = OURS_TUNING
            if only & {1, 2}:
                entry.update(await timing(bench, [*BASE, *OURS_MODES, *LEVERS], size, only, stalls))
                save(out, "peers.json", results)
            if server == "tuned" and only & {3, 5}:
                entry.update(await long_and_replay(bench, size, out))
                save(out, "peers.json", results)
            if server == "tuned" and 6 in only:
                say(f"  6 prompt cache: model server {args.model_url or 'the fake cache'}")
                # against the fake cache it tests the plumbing: the small cases do
                cases = size if args.model_url else QUICK
                entry["cache"] = await cache.measure(bench, BASE, args.model_url, cases)
                save(out, "peers.json", results)
            if 4 in only:
                entry["waiting"] = {}
                await waiting_all(
                    bench,
                    size["waiting"],
                    entry["waiting"],
                    lambda: save(out, "peers.json", results),
                    stalls,
                )
    return results


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.peers.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small workloads (a smoke run)")
    parser.add_argument("--only", default="1,2,3,4,5,6", help="workloads to run, e.g. 1,3")
    parser.add_argument(
        "--model-url",
        help="workload 6's model server, llama-server's /v1 URL (`make real-model` prints it); "
        "default: the fake server acting as a prompt cache (a test of the plumbing)",
    )
    parser.add_argument("--server", default="tuned,defaults", help="tuned, defaults or both")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "results")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_logging()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    ensure_venvs()
    started = time.monotonic()
    results = asyncio.run(run(args, out))
    seconds = time.monotonic() - started
    load = os.getloadavg()
    results |= {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}, temporalio {temporalio.__version__}",
        "load_average_at_end": [round(v, 2) for v in load],
        "mode": "quick" if args.quick else "full",
        "seconds": round(seconds),
    }
    save(out, "peers.json", results)
    if "3" in args.only.split(","):  # the chart of workload 3's history bytes
        report.chart(results, out / "peers_history.png")
    print()
    print(report.text(results))
    print(
        f"\n{results['mode']} run in {seconds:.0f} s · {results['machine']} · load "
        f"{load[0]:.1f} · results in {out}/peers.json, peers_history.png"
    )
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # (the SDK's occasional crash at interpreter exit: stack notes)
