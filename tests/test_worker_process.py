"""`python worker.py` as a newcomer runs it: no TEMPORAL_ADDRESS and no OPENAI_API_KEY, so it
starts the embedded dev server and uses the offline demo model; the printed command, pasted
into a shell, starts an agent whose answer comes back; Ctrl-C stops both cleanly."""

from __future__ import annotations

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
