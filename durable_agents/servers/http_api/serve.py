"""`agent serve [--host 127.0.0.1] [--port 8000]`: the HTTP API, AG-UI and the web console.

It connects to Temporal as every `agent` command does (`--address`, `--namespace`, the
environment, the profile), then serves `app.create_app` with uvicorn until Ctrl-C. Without
credentials (`AGENT_PRINCIPALS_FILE`, `AGENT_OIDC_ISSUER`, `AGENT_API_TOKEN`: `servers.auth`)
it listens on loopback only. The heavy imports (FastAPI, uvicorn) happen when
the command runs, so the rest of the `agent` CLI starts as fast as before.
"""

from __future__ import annotations

import argparse
import sys

from durable_agents.runtime.extras import require
from durable_agents.servers.http_serving import SERVED, SHUTDOWN_GRACE_SECONDS, CommandContext

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"listen address ({DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT})")
    parser.add_argument(
        "--cors-origin",
        action="append",
        metavar="ORIGIN",
        help="a browser origin allowed to call the API (repeat; env AGENT_API_CORS_ORIGINS)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME",
        help="a host name the server is reached by besides the listen address and localhost "
        "(repeat; '*' for any, behind a proxy that checks it; env AGENT_API_ALLOWED_HOSTS); "
        "any other Host header is answered 421",
    )
    parser.add_argument(
        "--web-ui",
        metavar="URL",
        help="the Temporal Web UI the console links runs to (env AGENT_WEB_UI_URL; default: a "
        "dev server's on this machine once its Web UI answers, else no links)",
    )
    parser.add_argument(
        "--stream-read",
        choices=("query", "updates"),
        help="how runs' event streams are read: query (default; nothing in a run's history or "
        "Web UI timeline) or updates (live text sooner under load; every poll in the history); "
        "env AGENT_SERVE_STREAM_READ",
    )


async def serve(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Run the server until it is stopped (see the module docstring)."""
    require("server", "agent serve")
    import uvicorn

    from durable_agents.client.connection import connect
    from durable_agents.errors import InvalidInput
    from durable_agents.runtime.web_ui import web_ui_link
    from durable_agents.servers.auth.authenticator import server_authenticator
    from durable_agents.servers.http_api.app import create_app
    from durable_agents.servers.http_api.config import ConfigError, ServeConfig

    target = ctx.target
    authenticator = server_authenticator(target.settings, args.host)
    try:
        web_ui = web_ui_link(target.address, target.settings, args.web_ui)
    except ValueError as error:
        raise InvalidInput(str(error), field="web_ui") from None
    try:
        config = ServeConfig.from_env(
            namespace=target.namespace,
            task_queue=target.task_queue,
            cors_origins=tuple(args.cors_origin or ()),
            allowed_hosts=(args.host, *(args.allowed_host or ())),
            web_ui=web_ui,
            stream_reading=args.stream_read,
            authenticator=authenticator,
        )
    except ConfigError as error:
        raise InvalidInput(str(error)) from None
    client = await connect(target)
    app = create_app(client, config)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_level="info",
            lifespan="on",
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
    )
    auth = authenticator.describe()
    web_ui_line = await web_ui.describe()
    print(
        f"agent serve: http://{args.host}:{args.port}/ (console), /v1 (API), /agui (AG-UI), "
        f"/openapi.json · Temporal {target.address} namespace {target.namespace} · task queue "
        f"{target.task_queue} · Web UI {web_ui_line} · {auth}",
        file=sys.stderr,
        flush=True,
    )
    await server.serve()
    if not server.started:
        raise InvalidInput(
            f"could not listen on {args.host}:{args.port} (see the message above)", field="port"
        )
    return SERVED
