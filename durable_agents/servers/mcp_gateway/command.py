"""`agent mcp [--http --port N]`: the MCP gateway on stdio (what Claude Desktop and Cursor start
as a subprocess) or on streamable HTTP at `http://127.0.0.1:N/mcp` (every request with a
bearer token when credentials are configured: `servers.auth`).

Over stdio, stdout is the MCP channel: nothing else is written there (logs go to stderr)."""

from __future__ import annotations

import argparse

from durable_agents.runtime.extras import require
from durable_agents.servers import http_serving

DEFAULT_PORT = 8765
MCP_PATH = "/mcp"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `agent mcp`."""
    parser.add_argument(
        "--http",
        action="store_true",
        help=f"serve streamable HTTP at http://127.0.0.1:PORT{MCP_PATH} instead of stdio",
    )
    http_serving.add_port_option(parser, DEFAULT_PORT, "the HTTP port, with --http")
    http_serving.add_guard_options(parser)


async def mcp(args: argparse.Namespace, ctx: http_serving.CommandContext) -> int:
    """Serve until the client goes away (stdio) or Ctrl-C (HTTP)."""
    require("mcp", "agent mcp")
    from mcp.server.transport_security import TransportSecuritySettings

    from durable_agents.servers.auth.authenticator import server_authenticator
    from durable_agents.servers.mcp_gateway.server import (
        build_server,  # the SDK only for this command
    )
    from durable_agents.servers.run_control import connect_control

    authenticator = server_authenticator(ctx.target.settings, args.host) if args.http else None
    control = await connect_control(ctx.target, "mcp")
    server = build_server(control)
    if not args.http:
        await server.run_stdio_async()
        return http_serving.SERVED
    # The SDK's own Host/Origin check (any port of localhost) gives way to `RequestGuard`, the
    # one every server here shares: this server's own origin only, 415 to a POST not JSON.
    assert authenticator is not None
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=args.host,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    url = f"http://{args.host}:{args.port}{MCP_PATH}"
    await http_serving.serve(
        http_serving.guarded(app, args, authenticator),
        args.port,
        f"MCP server (streamable HTTP) on {url} · Temporal {ctx.target.address} · "
        f"task queue {ctx.target.task_queue} · {authenticator.describe()}",
        args.host,
    )
    return http_serving.SERVED
