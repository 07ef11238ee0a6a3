"""Targets 1 and 2: wall time and worker CPU per turn, and throughput, ours vs the naive loop.

1. One run of 20 turns, each turn 1 model call + 2 parallel calculator calls (then a last model
   call that answers). Per turn: the run's wall time (start to result, at the client) / 20, and
   the worker process's user+sys CPU over the run / 20. Runs alternate A B A B after one
   warm-up run each; medians of `repeats` runs each.
2. 200 runs of 3 such turns started at once: seconds until the last one finished, alternating
   ours and naive `throughput_repeats` times; the median of each.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client

from bench.harness import Proc, median, spread


@dataclass
class Side:
    """One configuration under test: its worker process and task queue."""

    kind: str
    proc: Proc
    queue: str
    label: str = ""
    """How results name it (default: `kind`)."""
    start: Callable[[Client, int, str], Awaitable[Any]] | None = None
    """How a run of `turns` turns starts on it, given its workflow id (default: by `kind`;
    the peers of `bench.peers` bring their own)."""

    @property
    def name(self) -> str:
        return self.label or self.kind


def calc_prompt(turns: int) -> str:
    return f"[calc {turns}] Compute two products per step, {turns} steps, then answer."


async def start_run(client: Client, side: Side, turns: int, prefix: str) -> Any:
    workflow_id = f"{prefix}-{side.kind}-{uuid.uuid4().hex[:10]}"
    if side.start is not None:
        return await side.start(client, turns, workflow_id)
    if side.kind == "naive":
        return await client.start_workflow(
            "NaiveAgentWorkflow",
            {"prompt": calc_prompt(turns), "tools": ["calculator"], "max_turns": turns + 1},
            id=workflow_id,
            task_queue=side.queue,
        )
    return await client.start_workflow(
        "AgentWorkflow",
        {"prompt": calc_prompt(turns), "tools": ["calculator"], "max_iterations": turns + 1},
        id=workflow_id,
        task_queue=side.queue,
    )


async def one_run(client: Client, side: Side, turns: int) -> tuple[float, float, str]:
    """(wall seconds, worker CPU seconds, workflow id) of one run of `turns` turns."""
    cpu = side.proc.cpu()
    started = time.perf_counter()
    handle = await start_run(client, side, turns, "speed")
    await handle.result()
    return time.perf_counter() - started, side.proc.cpu() - cpu, handle.id


async def per_turn(
    client: Client, sides: list[Side], turns: int = 20, repeats: int = 5
) -> dict[str, Any]:
    """Target 1: medians of `repeats` alternating runs per side, per turn (ms)."""
    for side in sides:  # warm-up: first imports, first sandbox, connections
        await one_run(client, side, turns)
    samples: dict[str, dict[str, list[float]]] = {s.name: {"wall": [], "cpu": []} for s in sides}
    for _ in range(repeats):
        for side in sides:
            wall, cpu, _ = await one_run(client, side, turns)
            samples[side.name]["wall"].append(wall / turns * 1000)
            samples[side.name]["cpu"].append(cpu / turns * 1000)
    return {
        kind: {
            "wall_ms_per_turn": round(median(s["wall"]), 2),
            "cpu_ms_per_turn": round(median(s["cpu"]), 2),
            "wall_samples": [round(v, 2) for v in s["wall"]],
            "cpu_samples": [round(v, 2) for v in s["cpu"]],
            "wall_spread": spread(s["wall"]),
            "cpu_spread": spread(s["cpu"]),
        }
        for kind, s in samples.items()
    } | {"turns": turns, "repeats": repeats}


async def burst(client: Client, side: Side, runs: int, turns: int) -> tuple[float, float]:
    """(seconds until the last of `runs` concurrent runs finished, worker CPU seconds)."""
    cpu = side.proc.cpu()
    started = time.perf_counter()
    handles = await asyncio.gather(*(start_run(client, side, turns, "burst") for _ in range(runs)))
    await asyncio.gather(*(h.result() for h in handles))
    return time.perf_counter() - started, side.proc.cpu() - cpu


async def throughput(
    client: Client, sides: list[Side], runs: int = 200, turns: int = 3, repeats: int = 2
) -> dict[str, Any]:
    """Target 2: medians over `repeats` alternating bursts per side."""
    samples: dict[str, dict[str, list[float]]] = {s.name: {"wall": [], "cpu": []} for s in sides}
    for _ in range(repeats):
        for side in sides:
            wall, cpu = await burst(client, side, runs, turns)
            samples[side.name]["wall"].append(wall)
            samples[side.name]["cpu"].append(cpu)
    return {
        kind: {
            "seconds": round(median(s["wall"]), 2),
            "runs_per_second": round(runs / median(s["wall"]), 2),
            "worker_cpu_seconds": round(median(s["cpu"]), 2),
            "samples": [round(v, 2) for v in s["wall"]],
            "spread": spread(s["wall"]),
        }
        for kind, s in samples.items()
    } | {"runs": runs, "turns": turns, "repeats": repeats}
