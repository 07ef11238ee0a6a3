"""`agent a2a [--port N]`: the A2A gateway on `http://127.0.0.1:N/` (JSON-RPC, streaming; the
agent card at `/.well-known/agent-card.json`, public; every other request with a bearer token
when credentials are configured: `servers.auth`)."""

from __future__ import annotations

import argparse

from durable_agents.runtime.extras import require
from durable_agents.servers import http_serving

DEFAULT_PORT = 8766
AGENT_CARD_PATH = "/.well-known/agent-card.json"
"""Public: the card says what the agent does and how to authenticate, never any data."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `agent a2a`."""
    http_serving.add_port_option(parser, DEFAULT_PORT, "the HTTP port")
    http_serving.add_guard_options(parser)


async def a2a(args: argparse.Namespace, ctx: http_serving.CommandContext) -> int:
    """Serve until Ctrl-C."""
    require("a2a", "agent a2a")
    from durable_agents.servers.a2a_gateway.app import build_app  # the SDK only for this command
    from durable_agents.servers.auth.authenticator import server_authenticator
    from durable_agents.servers.run_control import connect_control

    authenticator = server_authenticator(ctx.target.settings, args.host)
    http_serving.check_port(args.port, args.host)
    control = await connect_control(ctx.target, "a2a")
    url = f"http://{args.host}:{args.port}/"
    app = build_app(control, url)
    await http_serving.serve(
        http_serving.guarded(app, args, authenticator, public=(AGENT_CARD_PATH,)),
        args.port,
        f"A2A server on {url} (agent card: {url}.well-known/agent-card.json) · Temporal "
        f"{ctx.target.address} · task queue {ctx.target.task_queue} · "
        f"{authenticator.describe()}",
        args.host,
    )
    return http_serving.SERVED
