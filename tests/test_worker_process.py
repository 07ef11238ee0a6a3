"""`python worker.py` as a newcomer runs it: no TEMPORAL_ADDRESS and no OPENAI_API_KEY, so it
starts the embedded dev server and uses the offline demo model; the printed command, pasted
into a shell, starts an agent whose answer comes back; Ctrl-C stops both cleanly.

The embedded server's lifetime, with real processes: a worker killed with SIGKILL takes its
server down (no orphan for the next `make run` to reuse silently), and a worker that finds a
server already listening says so, names its address, and leaves it running when it stops.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from durable_agents.runtime.dev_server import DevServer, is_listening
from testkit.crash_tools import WorkerProcess
from testkit.eventually import eventually

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def read_until(process: subprocess.Popen[str], marker: str, timeout: float) -> str:
    """Read the worker's output until a line contains `marker`."""
    assert process.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if marker in line:
            return "".join(seen)
    raise AssertionError(f"no {marker!r} in worker output:\n{''.join(seen)}")


def test_make_run_flow_embedded_server_and_demo_model(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TEMPORAL_ADDRESS", "OPENAI_API_KEY", "OPENAI_BASE_URL", "MODEL")
    }
    env |= {
        "TEMPORAL_DEV_PORT": str(port),
        "TEMPORAL_DEV_UI_PORT": str(ui_port),
        "TEMPORAL_DEV_DB": str(tmp_path / "dev.db"),
        "AGENT_WORKSPACE": str(tmp_path / "workspace"),
        "MEMORY_DATABASE_PATH": str(tmp_path / "memory.db"),
        "TASK_QUEUE": "agents-e2e",
    }
    worker = subprocess.Popen(
        [sys.executable, "worker.py"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        banner = read_until(worker, "Ctrl-C stops", timeout=90)
        assert "OFFLINE DEMO MODEL" in banner
        assert f"Web UI: http://localhost:{ui_port}" in banner
        command = re.search(r"^\s+(\S*temporal workflow start .*)$", banner, re.M)
        assert command, banner
        start = subprocess.run(
            command.group(1), shell=True, cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert start.returncode == 0, start.stderr
        cli = shlex.split(command.group(1))[0]
        result = subprocess.run(
            [cli, "workflow", "result", "--address", f"localhost:{port}",
             "--workflow-id", "agent-demo-1", "--output", "json"],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        answer = json.loads(result.stdout)["result"]
        assert answer["answer"] == "The answer is 425."
        assert answer["stop_reason"] == "completed"
        assert [s["tool"] for s in answer["steps"]] == ["calculator"]
        assert answer["model"] == "demo-offline"
    finally:
        worker.send_signal(signal.SIGINT)
        out, _ = worker.communicate(timeout=60)
    assert worker.returncode == 0, out
    # The embedded server went down with the worker.
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0


# -- the embedded server's lifetime ---------------------------------------------------------------

REUSE_LINE = "reusing the Temporal server already listening on localhost:{port}: it was NOT started"

needs_proc = pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")


def embedded_env(tmp_path: Path, port: int, ui_port: int) -> dict[str, str]:
    """`make run`'s environment: no server or model configured, everything in `tmp_path`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEMPORAL_", "OPENAI_", "AGENT_", "MEMORY_"))
        and k not in ("MODEL", "TASK_QUEUE", "LOG_LEVEL")
    }
    return env | {
        "TEMPORAL_DEV_PORT": str(port),
        "TEMPORAL_DEV_UI_PORT": str(ui_port),
        "TEMPORAL_DEV_DB": str(tmp_path / "dev.db"),
        "AGENT_WORKSPACE": str(tmp_path / "workspace"),
        "MEMORY_DATABASE_PATH": str(tmp_path / "memory.db"),
        "TASK_QUEUE": "agents-lifetime",
        "WORKER_DRAIN_SECONDS": "0",
        "PYTHONUNBUFFERED": "1",
    }


def live_processes_naming(text: str) -> list[int]:
    """Pids of the live processes (not zombies) whose command line holds `text`: for the dev
    server's database file, the server and its supervisor."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue  # it exited while we looked
        if text.encode() in arguments and state != "Z":
            found.append(int(entry.name))
    return found


def server_gone(db_file: Path, port: int) -> bool:
    return not live_processes_naming(str(db_file)) and not is_listening("127.0.0.1", port)


@needs_proc
async def test_a_killed_worker_takes_its_embedded_server_down(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    db_file = tmp_path / "dev.db"
    worker = await WorkerProcess.start(
        embedded_env(tmp_path, port, ui_port), tmp_path / "worker.log", ready_timeout=90
    )
    try:
        output = worker.output()
        assert f"started an embedded Temporal dev server on localhost:{port}" in output
        assert "stops when this worker stops, even if the worker is killed" in output
        assert len(live_processes_naming(str(db_file))) == 2  # the server and its supervisor
        assert is_listening("127.0.0.1", port)

        worker.kill()  # SIGKILL: no drain, no finally, no goodbye
        assert await worker.wait(30) == -signal.SIGKILL
        await eventually(
            lambda: server_gone(db_file, port),
            timeout=60,
            what=f"the embedded server (port {port}) to exit after its worker was killed",
        )
    finally:
        worker.kill()


@needs_proc
async def test_a_second_worker_says_it_reuses_a_server_it_did_not_start(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    db_file = tmp_path / "dev.db"
    env = embedded_env(tmp_path, port, ui_port)
    first = await WorkerProcess.start(env, tmp_path / "first.log", ready_timeout=90)
    second: WorkerProcess | None = None
    try:
        second = await WorkerProcess.start(env, tmp_path / "second.log", ready_timeout=90)
        output = second.output()
        assert REUSE_LINE.format(port=port) in output, output
        assert "this worker will not stop it" in output
        assert "starting an embedded dev server" not in output
        assert f"Ctrl-C stops the worker (not the server at localhost:{port}" in output

        # The second worker leaves the server it did not start running...
        assert await second.stop(signal.SIGINT) == 0
        assert is_listening("127.0.0.1", port)
        assert len(live_processes_naming(str(db_file))) == 2
        # ... and the worker that started it stops it.
        assert await first.stop(signal.SIGINT) == 0
        await eventually(lambda: server_gone(db_file, port), what="the embedded server to stop")
    finally:
        for worker in (first, second):
            if worker is not None:
                worker.kill()
                await asyncio.wait_for(worker.process.wait(), 30)


@needs_proc
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
async def test_a_server_whose_supervisor_is_killed_stops_too(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    db_file = tmp_path / "dev.db"
    server = await asyncio.to_thread(DevServer.start, db_file=db_file, port=port, ui_port=ui_port)
    try:
        supervisor = server.process.pid
        [temporal] = [pid for pid in live_processes_naming(str(db_file)) if pid != supervisor]
        assert Path(f"/proc/{temporal}/exe").resolve().name == "temporal"
        os.kill(supervisor, signal.SIGKILL)  # the pipe's watcher gone: the kernel's signal stays
        assert await asyncio.to_thread(server.process.wait) == -signal.SIGKILL
        await eventually(lambda: server_gone(db_file, port), what="the server to follow")
    finally:
        await asyncio.to_thread(server.stop)
