"""Issue 37 part 3: what telemetry costs per turn (`runtime.telemetry` on against off).

One long `AgentWorkflow` per mode on a Temporal dev server, the engine's workers in this process
and a model that answers at once (a calculator call a turn: `bench.context_fit.InstantModel`), so
a turn is the engine's own work: the workflow's tasks, the model activity and the tool. With
telemetry on, every turn ends a turn span, a model-call span and a tool span, each exported over
OTLP/HTTP (protobuf) to a real receiver in a process of its own (`testkit.otlp_receiver`) before
the activation or the attempt reports, and records the metrics. Measured per turn: wall time and
this process's CPU time (the worker's), the median over the turns of `--rounds` runs of each mode,
the modes alternating (off, on, off, on, ...) so the shared machine's load hits both alike.

    .venv/bin/python -m bench.telemetry [--turns 30] [--rounds 3] [--out f.json]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from statistics import median
from tempfile import TemporaryDirectory
from typing import Any

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from bench.context_fit import InstantModel, run
from durable_agents.contracts.model_io import ModelReply, ModelRequest
from durable_agents.runtime import telemetry


class TimedModel(InstantModel):
    """`InstantModel` that also notes the wall clock at every call."""

    def __init__(self, turns: int) -> None:
        super().__init__(turns)
        self.wall: list[float] = []

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.wall.append(time.monotonic())
        return await super().complete(request)


def gaps(marks: list[float], turns: int) -> list[float]:
    return [b - a for a, b in itertools.pairwise(marks)][:turns]


async def one_run(env: WorkflowEnvironment, turns: int, workspace: Path) -> dict[str, list[float]]:
    """Wall and CPU seconds of each turn of one run (turn n: model call n to model call n+1)."""
    model = TimedModel(turns)
    cpu = await run(turns, env, workspace, model)
    return {"wall": gaps(model.wall, turns), "cpu": cpu}


def start_receiver() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "testkit.otlp_receiver"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    assert line.startswith("READY "), line
    return process, line.removeprefix("READY ")


def summary(per_turn: dict[str, list[float]]) -> dict[str, float]:
    return {
        "wall_ms": round(median(per_turn["wall"]) * 1000, 2),
        "cpu_ms": round(median(per_turn["cpu"]) * 1000, 2),
    }


async def measure(turns: int, rounds: int) -> dict[str, Any]:
    receiver, endpoint = start_receiver()
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=f"{sys.prefix}/bin/temporal",
        data_converter=pydantic_data_converter,
    )
    modes: dict[str, dict[str, list[float]]] = {
        "off": {"wall": [], "cpu": []},
        "on": {"wall": [], "cpu": []},
    }
    try:
        with TemporaryDirectory() as folder:
            await one_run(env, 3, Path(folder))  # warm up (imports, the sandbox)
            for _ in range(rounds):
                for mode in ("off", "on"):
                    if mode == "on":
                        telemetry.install(
                            OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces"),
                            OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics"),
                        )
                    try:
                        found = await one_run(env, turns, Path(folder))
                    finally:
                        telemetry.close()
                    for key in ("wall", "cpu"):
                        modes[mode][key] += found[key]
    finally:
        await env.shutdown()
        receiver.terminate()
        receiver.wait(10)
    off, on = summary(modes["off"]), summary(modes["on"])
    return {
        "turns": turns,
        "rounds": rounds,
        "off": off,
        "on": on,
        "overhead": {
            "wall_ms": round(on["wall_ms"] - off["wall_ms"], 2),
            "cpu_ms": round(on["cpu_ms"] - off["cpu_ms"], 2),
            "wall_pct": round((on["wall_ms"] / off["wall_ms"] - 1) * 100, 1),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = asyncio.run(measure(args.turns, args.rounds))
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
