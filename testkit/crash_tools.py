"""A side-effecting tool for worker processes that get killed, plus helpers to run `worker.py`
as a subprocess and read what the tool did.

A worker started with `AGENT_TOOL_MODULES=testkit.crash_tools` imports this module, which registers
`crash_effect` into the application's `REGISTRY`. The tool runs in that other process, so it
records every start, effect, skip and finish as a JSON line in `$CRASH_RECORD_DIR/events.jsonl`
(one `O_APPEND` write per line, so several processes can share the file).

Its effect is exactly-once by construction: the effect *is* creating the file
`$CRASH_RECORD_DIR/ledger/<sha256 of ctx.idempotency_key>` with `os.link`, which fails if the file
exists. A retry after a crash (a new attempt, perhaps on another worker) finds the file and skips
the effect. So "effects per key" must be 1 whatever is killed when, while "starts per key" may be
more than 1 (Temporal retries a tool whose worker died before it completed).

The tools are registered only in a process that was asked to load this module (it is named in
`AGENT_TOOL_MODULES`), so the pytest process, which imports it for the helpers, keeps the
application's tool list unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import socket
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.common import RetryPolicy

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.testing import fake_openai as fake
from durable_agents.tools.catalog import REGISTRY
from durable_agents.tools.definition import ToolContext, tool
from testkit.eventually import eventually

ROOT = Path(__file__).resolve().parent.parent
RECORD_DIR_ENV = "CRASH_RECORD_DIR"
MODULE = "testkit.crash_tools"
READY_MARKER = "Worker ready on task queue"

# -- the tool ------------------------------------------------------------------------------------


class CrashEffectArgs(BaseModel):
    label: str = Field(description="What to do; returned in the result.")
    hold_before: float = Field(
        default=0.0, ge=0, description="Seconds to wait before the effect (first attempt only)."
    )
    hold_after: float = Field(
        default=0.0,
        ge=0,
        description="Seconds to wait after performing the effect, before returning.",
    )
    hold_until_released: bool = Field(
        default=False,
        description="After performing the effect, wait until the test calls `release` for it.",
    )
    approval: bool = Field(default=False, description="Whether a person must approve the call.")


def record_dir() -> Path:
    value = os.environ.get(RECORD_DIR_ENV)
    if not value:
        raise RuntimeError(f"{RECORD_DIR_ENV} is not set: crash_effect has nowhere to record")
    return Path(value)


def ledger_path(folder: Path, key: str) -> Path:
    return folder / "ledger" / hashlib.sha256(key.encode()).hexdigest()


def release_path(folder: Path, key: str) -> Path:
    return folder / "release" / hashlib.sha256(key.encode()).hexdigest()


def release(folder: Path, key: str) -> None:
    """Let a `crash_effect` call held with `hold_until_released` finish (it runs in a worker
    process, so the signal is a file)."""
    target = release_path(folder, key)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch()


def record(folder: Path, event: str, key: str, **extra: Any) -> None:
    """Append one JSON line, in a single write, to the shared events file."""
    line = json.dumps({"event": event, "key": key, "pid": os.getpid(), "t": time.time(), **extra})
    fd = os.open(folder / "events.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def perform_once(folder: Path, key: str, label: str) -> bool:
    """The effect: create the ledger file for `key`, atomically. False if it already existed."""
    target = ledger_path(folder, key)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    temporary.write_text(json.dumps({"key": key, "label": label, "pid": os.getpid()}))
    try:
        os.link(temporary, target)  # fails if another attempt already did it
    except FileExistsError:
        return False
    finally:
        temporary.unlink()
    return True


@tool(
    start_to_close_timeout=timedelta(seconds=60),
    heartbeat_timeout=timedelta(seconds=2),
    retry_policy=RetryPolicy(
        maximum_attempts=10,
        initial_interval=timedelta(seconds=0.2),
        maximum_interval=timedelta(seconds=1),
    ),
    requires_approval=lambda args: args.approval,
)
async def crash_effect(args: CrashEffectArgs, ctx: ToolContext) -> str:
    """Perform a side effect exactly once per call (idempotent across retries and crashes)."""
    folder = record_dir()
    attempt = activity.info().attempt
    key = ctx.idempotency_key
    record(folder, "start", key, attempt=attempt, label=args.label)
    if args.hold_before and attempt == 1:
        await asyncio.sleep(args.hold_before)
    performed = await asyncio.to_thread(perform_once, folder, key, args.label)
    record(folder, "effect" if performed else "skip", key, attempt=attempt)
    if performed and args.hold_after:
        await asyncio.sleep(args.hold_after)
    if performed and args.hold_until_released:
        while not release_path(folder, key).exists():
            await asyncio.sleep(0.05)
    record(folder, "finish", key, attempt=attempt)
    return f"did {args.label}"


def register() -> None:
    if REGISTRY.get(crash_effect.name) is None:
        REGISTRY.register(crash_effect)


if MODULE in [m.strip() for m in os.environ.get("AGENT_TOOL_MODULES", "").split(",")]:
    register()


# -- reading the records -------------------------------------------------------------------------


def events(folder: Path) -> list[dict[str, Any]]:
    path = folder / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def counts(folder: Path, key: str) -> Counter[str]:
    """How many times each event happened for one idempotency key."""
    return Counter(e["event"] for e in events(folder) if e["key"] == key)


def recorded(folder: Path, key: str, event: str) -> Callable[[], bool]:
    """A probe for `eventually`: the tool recorded `event` (once) for `key`."""
    return lambda: counts(folder, key)[event] == 1


def effects_by_key(folder: Path) -> Counter[str]:
    return Counter(e["key"] for e in events(folder) if e["event"] == "effect")


def ledger_entries(folder: Path) -> int:
    ledger = folder / "ledger"
    return (
        len([p for p in ledger.iterdir() if not p.name.startswith(".")]) if ledger.exists() else 0
    )


# -- running worker.py as a subprocess -----------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def worker_env(
    *,
    address: str,
    task_queue: str,
    base_url: str,
    api_key: str,
    workspace: Path,
    records: Path,
    drain_seconds: float = 0,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a `python worker.py` that loads these tools."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEMPORAL_", "OPENAI_", "AGENT_"))
        and k not in ("TASK_QUEUE", "MODEL", "WORKER_DRAIN_SECONDS", "LOG_LEVEL")
    }
    env |= {
        "TEMPORAL_ADDRESS": address,
        "TASK_QUEUE": task_queue,
        "OPENAI_API_KEY": api_key,
        "OPENAI_BASE_URL": base_url,
        "MODEL": "fake-model-1",
        "AGENT_WORKSPACE": str(workspace),
        "AGENT_TOOL_MODULES": MODULE,
        RECORD_DIR_ENV: str(records),
        "WORKER_DRAIN_SECONDS": str(drain_seconds),
        "PYTHONUNBUFFERED": "1",
    }
    env |= dict(extra or {})
    return env


@dataclass
class WorkerProcess:
    """`python worker.py` in a subprocess, its stdout and stderr going to a log file."""

    process: asyncio.subprocess.Process
    log_path: Path

    @classmethod
    async def start(
        cls, env: Mapping[str, str], log_path: Path, ready_timeout: float = 60.0
    ) -> WorkerProcess:
        """Start the worker and wait until it prints that it is ready (it polls by then)."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "worker.py",
                cwd=ROOT,
                env=dict(env),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
            )
        worker = cls(process, log_path)
        try:
            await worker.wait_for_output(READY_MARKER, ready_timeout)
        except BaseException:
            worker.kill()
            await worker.wait(10)
            raise
        return worker

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    async def wait_for_output(self, marker: str, timeout: float) -> None:
        def printed() -> bool:
            output = self.output()
            if marker in output:
                return True
            if self.process.returncode is not None:
                raise RuntimeError(  # not worth waiting for: fail at once
                    f"worker exited with {self.process.returncode} before printing "
                    f"{marker!r}:\n{output}"
                )
            raise AssertionError(f"worker has not printed {marker!r} yet:\n{output}")

        await eventually(printed, timeout=timeout, what=f"the worker to print {marker!r}")

    def send(self, sig: int) -> None:
        """Send `sig` without waiting for the process to exit."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL: no drain, no goodbye to the server."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    async def wait(self, timeout: float) -> int:
        return await asyncio.wait_for(self.process.wait(), timeout)

    async def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        """Send `sig` and wait for the exit code (killing it if it does not exit in time)."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(sig)
        try:
            return await self.wait(timeout)
        except TimeoutError:
            self.kill()
            await self.wait(10)
            raise AssertionError(
                f"worker did not exit within {timeout}s of signal {sig}:\n{self.output()}"
            ) from None


@dataclass
class WorkerCluster:
    """Worker processes on one task queue of a Temporal server, started and stopped (or killed)
    by a test, all recording into the same folder and talking to the same model server."""

    client: Client
    base_url: str
    folder: Path
    api_key: str = "sk-crash-test-7f3e9a1c"
    drain_seconds: float = 0
    extra_env: Mapping[str, str] = field(default_factory=dict)
    task_queue: str = field(default_factory=lambda: f"crash-{uuid.uuid4().hex[:8]}")
    workers: list[WorkerProcess] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.records.mkdir(parents=True, exist_ok=True)
        (self.folder / "workspace").mkdir(parents=True, exist_ok=True)

    @property
    def records(self) -> Path:
        return self.folder / "records"

    @property
    def address(self) -> str:
        return self.client.service_client.config.target_host

    async def start_worker(self) -> WorkerProcess:
        env = worker_env(
            address=self.address,
            task_queue=self.task_queue,
            base_url=self.base_url,
            api_key=self.api_key,
            workspace=self.folder / "workspace",
            records=self.records,
            drain_seconds=self.drain_seconds,
            extra=self.extra_env,
        )
        log = self.folder / f"worker-{len(self.workers) + 1}.log"
        worker = await WorkerProcess.start(env, log)
        self.workers.append(worker)
        return worker

    async def kill(self, worker: WorkerProcess) -> None:
        worker.kill()
        code = await worker.wait(10)
        assert code == -signal.SIGKILL, f"the worker was not killed by SIGKILL (exit {code})"

    async def start_run(
        self, payload: Mapping[str, Any], workflow_id: str | None = None
    ) -> WorkflowHandle[Any, Any]:
        return await self.client.start_workflow(
            "AgentWorkflow",
            dict(payload),
            id=workflow_id or f"crash-{uuid.uuid4()}",
            task_queue=self.task_queue,
            result_type=AgentResult,
        )

    async def result_of(self, handle: WorkflowHandle[Any, Any], timeout: float = 60) -> AgentResult:
        try:
            result = await asyncio.wait_for(handle.result(), timeout)
        except TimeoutError:
            raise AssertionError(f"run {handle.id} did not finish:\n{self.logs()}") from None
        assert isinstance(result, AgentResult)
        return result

    def logs(self) -> str:
        return "\n".join(f"--- {w.log_path.name}\n{w.output()}" for w in self.workers)

    async def close(self) -> None:
        for worker in self.workers:
            worker.kill()
            await worker.wait(10)


def killed_in_the_second_call(fake_model: fake.FakeOpenAIServer) -> None:
    """The model's script for a run whose worker is killed during its second model call: a
    `crash_effect` call (`a`), a reply the killed worker waits for in vain, the answer the next
    worker gets ("done after the crash")."""
    fake_model.enqueue(
        fake.tool_calls(fake.call("crash_effect", {"label": "a"}, id="c1")),
        fake.delay(120, fake.text("the killed worker never gets this")),
        fake.text("done after the crash"),
    )


async def attempts_of(handle: WorkflowHandle[Any, Any], activity_type: str) -> list[int]:
    """Attempt number of each started activity of `activity_type`, in history order (Temporal
    records one ActivityTaskStarted per activity: its last attempt)."""
    history = await handle.fetch_history()
    scheduled: dict[int, str] = {}
    attempts: list[int] = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = attrs.activity_type.name
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started = event.activity_task_started_event_attributes
            if scheduled.get(started.scheduled_event_id) == activity_type:
                attempts.append(started.attempt)
    return attempts
