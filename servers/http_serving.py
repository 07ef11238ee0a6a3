"""Serving a gateway's ASGI app on 127.0.0.1 with uvicorn, for `agent mcp --http` and `agent a2a`.

Loopback only: the gateways have no authentication of their own (a client that reaches the port
can start runs and approve their calls), so they are not offered beyond the machine."""

from __future__ import annotations

import argparse
import errno
import socket
import sys
from typing import Any

from cli.errors import CliError

HOST = "127.0.0.1"
SHUTDOWN_GRACE_SECONDS = 5
"""On shutdown, open requests (SSE streams, `?wait=true`) get this long, then are closed: a
client that holds a stream open must not keep the server from stopping."""


def add_port_option(parser: argparse.ArgumentParser, default: int, help: str) -> None:
    """A gateway command's `--port N` option, `help` naming its default."""
    parser.add_argument(
        "--port", type=int, default=default, metavar="N", help=f"{help} (default {default})"
    )


def check_port(port: int) -> None:
    """A clear error now, instead of uvicorn's exit later, when `port` is taken."""
    if not 0 < port < 65536:
        raise CliError(f"--port: {port} is not a TCP port (1-65535)")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as error:
            why = "in use" if error.errno == errno.EADDRINUSE else error.strerror
            raise CliError(f"--port: cannot listen on {HOST}:{port} ({why})") from None


async def serve(app: Any, port: int, announce: str) -> None:
    """Serve `app` until Ctrl-C; `announce` (what is where) goes to stderr once listening."""
    import uvicorn  # only for the commands that serve

    check_port(port)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=HOST,
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
    )
    sys.stderr.write(announce + "\n")
    sys.stderr.flush()
    await server.serve()
