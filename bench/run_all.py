"""Run every benchmark with its defaults: `python -m bench.run_all` (what `make bench` calls).

Each benchmark runs as its own process (`python -m bench.<name> ...`), one after the other (they
are CPU-bound; on 2 cores they would only slow each other down), and writes its results under
`--out` (default: `bench/results/`). At the end this prints each one's verdict, time and where
its results went. `--only NAME` runs one of them. Exit status 1 if any of them failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Benchmark:
    name: str
    module: str
    what: str
    args: Callable[[Path], list[str]]
    results: Callable[[Path], list[Path]]


BENCHMARKS = [
    Benchmark(
        "history_growth",
        "bench.history_growth",
        "history per iteration / turn: 300-iteration run and 300-turn session, ours vs naive",
        lambda out: ["--out", str(out / "history_growth.json")],
        lambda out: [out / "history_growth.json", out / "history_growth.md"],
    ),
    Benchmark(
        "history_growth_999",
        "bench.history_growth",
        "ours only: one run at the most iterations allowed (999), through continue-as-new",
        lambda out: [
            *("--iterations", "999", "--configs", "ours", "--workloads", "agent"),
            *("--out", str(out / "history_growth_999.json")),
        ],
        lambda out: [out / "history_growth_999.json", out / "history_growth_999.md"],
    ),
    Benchmark(
        "soak",
        "bench.soak",
        "many runs through injected model faults and worker kills",
        lambda out: ["--workdir", str(out / "soak")],
        lambda out: [out / "soak" / "soak-report.json"],
    ),
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run_all", description=__doc__)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results",
        help="folder for the results (bench/results)",
    )
    parser.add_argument(
        "--only", action="append", choices=[b.name for b in BENCHMARKS], help="run only these"
    )
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    chosen = [b for b in BENCHMARKS if not args.only or b.name in args.only]
    done: list[tuple[Benchmark, int, float]] = []
    for bench in chosen:
        command = [sys.executable, "-m", bench.module, *bench.args(out)]
        print(f"\n== {bench.name}: {bench.what}\n$ {' '.join(command)}", flush=True)
        started = time.monotonic()
        code = subprocess.call(command)
        done.append((bench, code, time.monotonic() - started))
    print("\n== results")
    for bench, code, seconds in done:
        verdict = "PASS" if code == 0 else f"FAIL (exit {code})"
        where = ", ".join(str(p) for p in bench.results(out) if p.exists()) or "(no results)"
        print(f"{bench.name}: {verdict} in {seconds:.0f} s -> {where}")
    return 0 if all(code == 0 for _, code, _ in done) else 1


if __name__ == "__main__":
    sys.exit(main())
