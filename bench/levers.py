"""Each lever on its own, measured against the current defaults in the same run:

    python -m bench.levers [--repeats 5] [--only NAME,...] [--code NAME=DIR ...]
                           [--throughput RUNS] [--server-arg ARG ...] [--server-defaults]

For every lever, a worker with it and a baseline worker (ours, today's defaults) take turns at
target 1's workload (a 20-turn run: 1 model call + 2 calculator calls a turn), A B A B after a
warm-up run each; the table gives the medians per turn and the lever's ratio to the baseline.
`--throughput N` also times N concurrent 3-turn runs on each (once, A then B). `--code
NAME=DIR` measures a copy of the code in DIR (a workflow-side change tried outside the repo)
as a lever named NAME. Writes `bench/results/levers.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import Bench, bench_stack
from bench.run_all import FAST_TRANSFER_QUEUE, say
from bench.speed import Side, per_turn, throughput


@dataclass(frozen=True)
class Lever:
    name: str
    what: str
    kind: str = "ours"
    tuning: dict[str, Any] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)


LEVERS = [
    Lever("SDK default sandbox", "re-import per run, as before", tuning={"sandbox": "default"}),
    Lever("no sandbox", "UnsandboxedWorkflowRunner", tuning={"sandbox": "off"}),
    Lever("plain requests", "no streaming (MODEL_STREAMING=false)", flags=("--no-streaming",)),
    Lever("SDK create()", "chat.completions.create, as before", flags=("--sdk-create",)),
    Lever(
        "no eager activities",
        "disable_eager_activity_execution",
        tuning={"eager_activities": False},
    ),
    Lever("2 workflow pollers", "workflow_task_pollers=2 (default 5)",
          tuning={"workflow_task_pollers": 2}),
    Lever("gc threshold 20000", "gc.freeze() and gen-0 threshold 20,000 (700)",
          flags=("--gc-threshold", "20000")),
    Lever("sticky cache 0", "max_cached_workflows=0: replay per task",
          tuning={"max_cached_workflows": 0}),
    Lever("affinity off", "AGENT_CACHE_AFFINITY=off (make run's embedded server before #38)",
          tuning={"cache_affinity": "off"}),
    Lever("affinity on", "AGENT_CACHE_AFFINITY=on (any other server before #38)",
          tuning={"cache_affinity": "on"}),
    Lever("naive", "the naive loop itself", kind="naive"),
    Lever("naive, shared client", "naive with one AsyncOpenAI", kind="naive",
          env={"NAIVE_SHARED_CLIENT": "1"}),
]  # fmt: skip


async def measure(bench: Bench, levers: Sequence[Lever], repeats: int, runs: int) -> list[Any]:
    base_proc, base_queue = bench.worker("ours")
    baseline = Side("ours", base_proc, base_queue, label="baseline")
    results = []
    for lever in levers:
        say(f"lever: {lever.name} ({lever.what})")
        proc, queue = bench.worker(
            lever.kind, lever.tuning, *lever.flags, cwd=lever.cwd, env=lever.env or None
        )
        side = Side(lever.kind, proc, queue, label=lever.name)
        timing = await per_turn(bench.client, [baseline, side], 20, repeats)
        row: dict[str, Any] = {"lever": lever.name, "what": lever.what, **timing}
        if runs:
            row["throughput"] = await throughput(bench.client, [baseline, side], runs, 3, 1)
        bench.stop_worker(proc)
        results.append(row)
    return results


def line(row: dict[str, Any]) -> str:
    base, lever = row["baseline"], row[row["lever"]]
    cells = [
        row["lever"],
        f"{lever['wall_ms_per_turn']:.1f} vs {base['wall_ms_per_turn']:.1f}",
        f"{lever['wall_ms_per_turn'] / base['wall_ms_per_turn']:.2f}x",
        f"{lever['cpu_ms_per_turn']:.1f} vs {base['cpu_ms_per_turn']:.1f}",
        f"{lever['cpu_ms_per_turn'] / base['cpu_ms_per_turn']:.2f}x",
        f"{lever['wall_spread']} / {base['wall_spread']}",
    ]
    if "throughput" in row:
        tp = row["throughput"]
        seconds, base_seconds = tp[row["lever"]]["seconds"], tp["baseline"]["seconds"]
        cells.append(f"{seconds:.1f} vs {base_seconds:.1f} s ({seconds / base_seconds:.2f}x)")
    return "| " + " | ".join(cells) + " |"


def table(results: Sequence[dict[str, Any]]) -> str:
    """The levers' Markdown table, one `line` a lever (printed by the run, and rendered in
    BENCHMARKS.md from its recorded `levers.json`)."""
    head = "| lever | wall ms/turn (lever vs baseline) | ratio | CPU ms/turn | ratio | spread |"
    runs = next((row["throughput"]["runs"] for row in results if "throughput" in row), None)
    if runs is not None:
        head += f" {runs} x 3-turn runs |"
    rule = "|" + " --- |" * (head.count("|") - 1)
    return "\n".join([head, rule, *(line(row) for row in results)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.levers", description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", help="comma-separated lever names")
    parser.add_argument("--code", action="append", default=[], help="NAME=DIR")
    parser.add_argument("--throughput", type=int, default=0, metavar="RUNS")
    parser.add_argument("--server-arg", action="append", default=[])
    parser.add_argument(
        "--server-defaults", action="store_true", help="keep the 20/s transfer-queue poll rate"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    levers = [
        *LEVERS,
        *(Lever(c.split("=", 1)[0], f"code in {c.split('=', 1)[1]}", cwd=c.split("=", 1)[1])
          for c in args.code),
    ]  # fmt: skip
    if args.only:
        names = set(args.only.split(","))
        levers = [lever for lever in levers if lever.name in names]

    async def go() -> list[Any]:
        fast = [] if args.server_defaults else FAST_TRANSFER_QUEUE
        async with bench_stack([*fast, *args.server_arg]) as bench:
            return await measure(bench, levers, args.repeats, args.throughput)

    results = asyncio.run(go())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "levers.json").write_text(json.dumps(results, indent=1) + "\n")
    print("\n" + table(results))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
