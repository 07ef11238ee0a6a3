"""Every performance target of issue 14, ours vs the naive loop, in one run (`make bench`):

    python -m bench.run_all [--quick] [--only 1,2,3,4,5] [--out DIR] [--tuning JSON]
                            [--session JSON] [--server-defaults] [--server-address HOST:PORT]

1. per turn: wall and worker CPU of a 20-turn run (1 model call + 2 calculator calls a turn),
   medians of alternating runs (`bench.speed`);
2. throughput: 200 concurrent 3-turn runs (`bench.speed`);
3. history bytes per session turn over 300 turns, 2 KB messages and tool outputs
   (`bench.session_history`), with a chart;
4. 1,000 runs waiting for an approval: worker RSS, p99 from signal to completion
   (`bench.waiting`);
5. replaying a recorded 100-turn history (`bench.replay`);
6. the live event stream: latency to a subscriber, history and worker CPU per turn with it on
   and off (`bench.stream`, ours only);
7. a task of 10 tool calls, code mode against ReAct: model calls, wall (`bench.code_mode`);
8. 3 worker processes on a server without eager dispatch: cache resends, history per turn, one
   worker killed (`bench.fleet`, on its own server);
9. 10,000 runs waiting on one worker: RSS, p99 at 25 approvals/s and with 40 in flight, what
   bounds it (`bench.waiting.scale`; `--quick`: 200);
10. a 5 MB document run with the payload store on: wall, history bytes, largest payload in
   history (`bench.large_document`, ours only).

Everything runs on one Temporal dev server started here (in memory, free ports), against one
zero-latency fake model server, with each worker in its own process (`bench.harness`). The
server's transfer-queue poll rate is raised from 20 to 1,000 per second unless
`--server-defaults`: at 20 a second (one shard), every workflow task that follows an activity
waits for the next 50 ms tick, which pins both loops at 100 ms a turn (see BENCHMARKS.md).
Prints one table and writes `summary.json`, one JSON file per target and
`history_per_turn.png` under `--out` (default `bench/results/`). `--quick`: smaller workloads
(under 3 minutes). Exit status 1 if a target of ours fails.

`--server-address HOST:PORT`: run against a Temporal server already running (namespace
`default`), e.g. on cores of its own, instead of starting a dev server here (docs/sizing.md).
Configure that server yourself (the transfer-queue poll rate above, the suggested
continue-as-new off); its CPU is not measured. Target 8 still starts its own server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import temporalio

from bench import code_mode, fleet, large_document, replay, session_history, stream, waiting
from bench.harness import Bench, bench_stack, quiet_logging
from bench.report import (
    Row,
    chart,
    replay_rows,
    rows_json,
    session_rows,
    speed_rows,
    table,
    throughput_rows,
    waiting_rows,
)
from bench.speed import Side, one_run, per_turn, throughput

FAST_TRANSFER_QUEUE = ["--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000"]
FULL = {"repeats": 7, "runs": 200, "tp_repeats": 2, "turns": 300, "waiting": 1000, "scale": 10_000}
QUICK = {"repeats": 5, "runs": 100, "tp_repeats": 1, "turns": 100, "waiting": 200, "scale": 200}
SIGNAL_RATE = waiting.SIGNAL_RATE

log = logging.getLogger("bench")


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def save(out: Path, name: str, data: Any) -> None:
    (out / name).write_text(json.dumps(data, indent=1) + "\n")


async def run(args: argparse.Namespace, out: Path) -> list[Row]:
    size = QUICK if args.quick else FULL
    tuning: dict[str, Any] = json.loads(args.tuning)
    only = {int(t) for t in args.only.split(",")}
    rows: list[Row] = []
    async with server_stack(args) as bench:
        ours_proc, ours_queue = bench.worker("ours", tuning)
        naive_proc, naive_queue = bench.worker("naive")
        sides = [Side("ours", ours_proc, ours_queue), Side("naive", naive_proc, naive_queue)]
        if 1 in only:
            say(f"target 1: 20-turn runs, {size['repeats']} alternating runs each")
            speed = await per_turn(bench.client, sides, 20, size["repeats"])
            save(out, "1_per_turn.json", speed)
            rows += speed_rows(speed)
        if 5 in only:
            say("target 5: record a 100-turn run of each and replay it")
            rows += replay_rows(await replay_target(bench, sides, out, tuning))
        if 2 in only:
            say(f"target 2: {size['runs']} concurrent 3-turn runs, x{size['tp_repeats']} each")
            result = await throughput(bench.client, sides, size["runs"], 3, size["tp_repeats"])
            save(out, "2_throughput.json", result)
            rows += throughput_rows(result)
        if 3 in only:
            say(f"target 3: a {size['turns']}-turn session of each")
            result = await session_target(bench, sides, size["turns"], json.loads(args.session))
            save(out, "3_session_history.json", result)
            chart(result, out / "history_per_turn.png")
            rows += session_rows(result)
        bench.stop_worker(ours_proc)
        bench.stop_worker(naive_proc)
        if 6 in only:
            say("target 6: the live event stream (20 sessions streaming at once; on vs off)")
            result = await stream.measure(bench, args.quick)
            save(out, "6_stream.json", result)
            rows += stream.table_rows(result)
        if 7 in only:
            say(f"target 7: 10 tool calls, code mode against ReAct, x{size['repeats']} each")
            result = await code_mode.measure(bench.client, size["repeats"])
            save(out, "7_code_mode.json", result)
            rows += code_mode.rows(result)
        if 4 in only:
            say(f"target 4: {size['waiting']} waiting runs on a fresh worker, each")
            result = {
                kind: await waiting.measure(
                    bench, kind, tuning if kind == "ours" else None, size["waiting"], SIGNAL_RATE
                )
                for kind in ("ours", "naive")
            }
            save(out, "4_waiting.json", result)
            rows += waiting_rows(result)
        if 9 in only:
            say(f"target 9: {size['scale']} waiting runs on one worker, then approved")
            result = await waiting.scale(bench, size["scale"], tuning)
            save(out, "9_scale.json", result)
            rows += waiting.scale_rows(result)
        if 10 in only:
            say("target 10: a 5 MB document through a run, payload store on and off")
            result = await large_document.measure(bench.client)
            save(out, "10_large_document.json", result)
            rows += large_document.rows(result)
    if 8 in only:  # its own server: eager activity dispatch off, as on a plain server
        runs = 30 if args.quick else 150
        say(f"target 8: 3 worker processes, {runs} three-turn runs, one worker killed")
        result = await fleet.measure(runs, 3, baseline=not args.quick)
        save(out, "8_fleet.json", result)
        rows += fleet.fleet_rows(result)
    return rows


def server_stack(args: argparse.Namespace) -> AbstractAsyncContextManager[Bench]:
    """The server and fake model the targets (all but 8) run on: a dev server started here,
    tuned unless `--server-defaults`, or the one at `--server-address`."""
    server_args = [] if args.server_defaults else FAST_TRANSFER_QUEUE
    return bench_stack(server_args, server_address=args.server_address)


async def replay_target(
    bench: Bench, sides: list[Side], out: Path, tuning: dict[str, Any]
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for side in sides:
        _, _, workflow_id = await one_run(bench.client, side, 100)
        history = await replay.record(
            bench.client, workflow_id, out / f"5_history_{side.kind}_100_turns.json"
        )
        cpu: list[float] = []
        times = await replay.replay_times(side.kind, history, tuning=tuning, cpu=cpu)
        result[side.kind] = replay.summary(side.kind, len(history.events), times, cpu)
    save(out, "5_replay.json", result)
    return result


async def session_target(
    bench: Bench, sides: list[Side], turns: int, session_input: dict[str, Any]
) -> dict[str, Any]:
    samples = [30, turns - 10]
    result: dict[str, Any] = {}
    for side in sides:
        result[side.kind] = await session_history.measure(
            bench.client,
            side.kind,
            side.queue,
            turns,
            samples,
            {**session_history.OURS_SESSION, **session_input},
        )
    return result


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run_all", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller workloads (< 3 min)")
    parser.add_argument("--only", default="1,2,3,4,5,6,7,8,9,10", help="targets, e.g. 1,3")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--tuning", default="{}", help="WorkerTuning fields for ours, as JSON")
    parser.add_argument(
        "--session",
        default="{}",
        help='target 3: SessionWorkflow input fields for ours, as JSON (e.g. {"turns": "child"})',
    )
    parser.add_argument(
        "--server-defaults",
        action="store_true",
        help="keep the dev server's transfer-queue poll rate (20/s)",
    )
    parser.add_argument(
        "--server-address",
        default=None,
        metavar="HOST:PORT",
        help="a Temporal server already running (e.g. on cores of its own) instead of a dev "
        "server started here; its CPU is not measured",
    )
    return parser.parse_args(argv)


def server_shown(args: argparse.Namespace) -> str:
    """What the summary says the targets ran on."""
    if args.server_address is not None:
        return f"external {args.server_address}"
    return "defaults" if args.server_defaults else "transferProcessorMaxPollRPS=1000"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_logging()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    rows = asyncio.run(run(args, out))
    seconds = time.monotonic() - started
    load = os.getloadavg()
    summary = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}, temporalio {temporalio.__version__}",
        "load_average_at_end": [round(v, 2) for v in load],
        "mode": "quick" if args.quick else "full",
        "server": server_shown(args),
        "tuning": json.loads(args.tuning),
        "seconds": round(seconds),
        "rows": rows_json(rows),
    }
    save(out, "summary.json", summary)
    print()
    print(table(rows))
    print(
        f"\n{summary['mode']} run in {seconds:.0f} s · {summary['machine']} · load "
        f"{load[0]:.1f} · server: {summary['server']} · results in {out}"
    )
    if (out / "peers.json").exists():  # issue 24's table, from the last `make bench-peers`
        from bench.peers.report import saved_table

        print("\n" + saved_table(out / "peers.json"))
    return 0 if all(r.passed for r in rows) else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # (the SDK's occasional crash at interpreter exit: stack notes)
