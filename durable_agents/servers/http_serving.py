"""Serving a gateway's ASGI app with uvicorn, for `agent mcp --http` and `agent a2a`.

Every request is authenticated (`servers.auth`: the principals file, OIDC, `AGENT_API_TOKEN`);
with none of them configured a gateway is open to whoever reaches it, so it listens on loopback
only (`--host` beyond it is refused before binding). Web pages must not reach a gateway through
the user's browser: every request passes `servers.request_guards.RequestGuard` first (421 to a
`Host` not served, 403 to another web origin, 415 to a POST that is not JSON), with the names
and origins of `--allowed-host` and `--allowed-origin`."""

from __future__ import annotations

import argparse
import errno
import socket
import sys
from typing import TYPE_CHECKING, Any, Protocol

from durable_agents.client.connection import Target
from durable_agents.errors import InvalidInput

if TYPE_CHECKING:
    from durable_agents.servers.auth.authenticator import Authenticator

HOST = "127.0.0.1"
SHUTDOWN_GRACE_SECONDS = 5
"""On shutdown, open requests (SSE streams, `?wait=true`) get this long, then are closed: a
client that holds a stream open must not keep the server from stopping."""
MAX_BODY_BYTES = 4 * 1024 * 1024
"""Largest request body a gateway reads (the MCP SDK's own default limit)."""


class CommandContext(Protocol):
    """What a serving command needs of the `agent` CLI's context: where the runs live."""

    @property
    def target(self) -> Target: ...


SERVED = 0
"""The exit code of a serving command that stopped as asked (Ctrl-C, the client went away)."""


def add_port_option(parser: argparse.ArgumentParser, default: int, help: str) -> None:
    """A gateway command's `--port N` option, `help` naming its default."""
    parser.add_argument(
        "--port", type=int, default=default, metavar="N", help=f"{help} (default {default})"
    )


def add_guard_options(parser: argparse.ArgumentParser) -> None:
    """`--host ADDRESS`, `--allowed-host NAME` and `--allowed-origin ORIGIN` (`RequestGuard`)."""
    parser.add_argument(
        "--host",
        default=HOST,
        metavar="ADDRESS",
        help=f"the address to listen on (default {HOST}); beyond loopback only with "
        "credentials: AGENT_PRINCIPALS_FILE or AGENT_OIDC_ISSUER",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name the server is reached by besides 127.0.0.1 and localhost (repeat); "
        "any other Host header is answered 421",
    )
    parser.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web origin (http://host:port) whose pages may call the server (repeat); "
        "requests from any other origin but the server's own are answered 403",
    )


def guarded(
    app: Any, args: argparse.Namespace, authenticator: Authenticator, public: tuple[str, ...] = ()
) -> Any:
    """`app` behind the guards every server has, outermost first: the security headers, the
    browser guard (the command line's host names and origins), the body size limit, who is
    calling (`servers.auth`; `public` paths pass without a principal), then the JSON nesting
    limit. Imported here: the guards are Starlette's, which only the commands that serve
    install (their extras)."""
    from durable_agents.servers.auth.middleware import Authentication
    from durable_agents.servers.request_guards import (
        BodyLimit,
        GuardSettings,
        NestingLimit,
        RequestGuard,
        SecurityHeaders,
        allowed_host_names,
        checked_origins,
    )

    try:
        origins = checked_origins(args.allowed_origin, "--allowed-origin")
    except ValueError as error:
        raise InvalidInput(str(error), field="allowed_origin") from None
    settings = GuardSettings(allowed_host_names(args.host, args.allowed_host), origins)
    authenticated = Authentication(NestingLimit(app), authenticator, public_paths=public)
    return SecurityHeaders(RequestGuard(BodyLimit(authenticated, MAX_BODY_BYTES), settings))


def check_port(port: int, host: str = HOST) -> None:
    """A clear error now, instead of uvicorn's exit later, when `port` is taken."""
    if not 0 < port < 65536:
        raise InvalidInput(f"--port: {port} is not a TCP port (1-65535)", field="port")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            why = "in use" if error.errno == errno.EADDRINUSE else error.strerror
            raise InvalidInput(
                f"--port: cannot listen on {host}:{port} ({why})", field="port"
            ) from None


async def serve(app: Any, port: int, announce: str, host: str = HOST) -> None:
    """Serve `app` until Ctrl-C; `announce` (what is where) goes to stderr once listening."""
    import uvicorn  # only for the commands that serve

    check_port(port, host)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
    )
    sys.stderr.write(announce + "\n")
    sys.stderr.flush()
    await server.serve()
