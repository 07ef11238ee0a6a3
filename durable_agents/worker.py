"""Run the agent worker: `python worker.py` (or `make run`).

It connects as the `temporal` CLI does (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
TEMPORAL_TLS*, or a TEMPORAL_PROFILE of a temporal.toml). When none of them names a server it
uses the one on localhost:7233 if one answers, else starts an embedded dev server (Web UI on
http://localhost:8233, data in .temporal/dev.db). Without OPENAI_API_KEY it uses the offline
demo model. Long-term memory (the remember / recall / forget tools) is opened and migrated at
start: SQLite in MEMORY_DATABASE_PATH, or PostgreSQL at MEMORY_DATABASE_URL. Ctrl-C (or
SIGTERM) drains and stops both. The embedded server stops with the worker even when the worker
is killed (runtime/dev_server.py); a server found already listening is reused, with a warning
that this worker did not start it and will not stop it. See runtime/settings.py for every
environment variable.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from durable_agents.activities.code_sandbox import code_mode_warning
from durable_agents.activities.mcp_config import load_mcp_config
from durable_agents.agent import Agent
from durable_agents.contracts.command_server import CommandServer
from durable_agents.contracts.policy import WorkerPolicy
from durable_agents.plugin import with_agents
from durable_agents.runtime import search_attributes
from durable_agents.runtime.dev_server import DevServer, is_listening, temporal_command
from durable_agents.runtime.extras import require
from durable_agents.runtime.log_format import configure_logging
from durable_agents.runtime.models import chat_model_for
from durable_agents.runtime.payload_store import THRESHOLD, external_storage, store_spec
from durable_agents.runtime.settings import EnvironmentSettings, SettingsError
from durable_agents.runtime.temporal_client import (
    DEFAULT_ADDRESS,
    connect_with_settings,
    load_connection,
)
from durable_agents.runtime.tracing import tracing_interceptors
from durable_agents.runtime.web_ui import started_web_ui
from durable_agents.runtime.workers import WorkerTuning, build_workers, deployment_config
from durable_agents.tools.catalog import CATALOG
from durable_agents.tools.memory_store import MemoryStore, open_memory_store

if TYPE_CHECKING:
    from durable_agents.activities.mcp_servers import McpServers

log = logging.getLogger("worker")


def address_flag(address: str | None) -> list[str]:
    """`--address X` unless X is None (the `temporal` CLI finds it in the same environment or
    profile) or the CLI's own default."""
    return [] if address in (None, DEFAULT_ADDRESS) else ["--address", address]


def start_command(settings: EnvironmentSettings, address: str | None, cli: str) -> str:
    """A ready-to-paste `temporal workflow start` command for this worker."""
    parts = ["workflow", "start", *address_flag(address)]
    parts += [
        "--type",
        "AgentWorkflow",
        "--task-queue",
        settings.task_queue,
        "--workflow-id",
        "agent-demo-1",
        "--input",
        '{"prompt": "What is 17 * 25?"}',
    ]
    return f"{cli} {shlex.join(parts)}"


def command_server(settings: EnvironmentSettings, namespace: str) -> CommandServer | None:
    """What the commands runs hand out name (AGENT_COMMAND_ADDRESS); None: the worker's own
    server (`runtime.workers.build_workers`)."""
    if settings.command_address is None:
        return None
    return CommandServer(address=settings.command_address, namespace=namespace)


def reuse_message(address: str) -> str:
    """What the worker says when it uses a local server it found instead of starting one."""
    return (
        f"reusing the Temporal server already listening on {address}: it was NOT started by "
        "this worker process (another worker's embedded server, a `temporal server start-dev` "
        "of yours, or one left by an older version), so this worker will not stop it, and its "
        "data and Web UI are whatever that server has"
    )


async def serve(
    settings: EnvironmentSettings, agents: Sequence[Agent[Any]] = (), deps: Any = None
) -> None:
    """Run the workers until SIGINT or SIGTERM: the engine's catalog, the modules of
    `AGENT_TOOL_MODULES`, and the application's `agents` (their tools get `deps` as
    `ctx.deps`)."""
    for module in settings.tool_modules:  # they register their tools in REGISTRY on import
        importlib.import_module(module)
    catalog = with_agents(CATALOG, agents)
    # A malformed MCP_CONFIG stops the worker here, naming the server and the field.
    mcp_config = load_mcp_config(settings.mcp_config) if settings.mcp_config else {}
    mcp: McpServers | None = None
    if mcp_config:  # the SDK is imported only then
        require("mcp", "MCP_CONFIG (MCP servers)")
        from durable_agents.activities.mcp_servers import McpServers

        mcp = McpServers(mcp_config)
        log.info(
            "MCP servers (started on first use, stopped on exit): %s",
            ", ".join(f"{c.name} ({c.transport}: {c.describe()})" for c in mcp_config.values()),
        )
    if (no_code_mode := code_mode_warning()) is not None:
        log.info(no_code_mode)
    server: DevServer | None = None
    connection = load_connection(settings)
    configured = connection.address is not None  # by the environment or a profile
    port = settings.dev_server_port
    if not configured:
        if is_listening("127.0.0.1", port):
            connection = connection.with_target(address=f"localhost:{port}")
            log.warning(reuse_message(connection.address or f"localhost:{port}"))
        else:
            log.info("no Temporal server on localhost:%d: starting an embedded dev server", port)
            server = DevServer.start(
                db_file=settings.dev_server_db,
                port=port,
                ui_port=settings.dev_server_ui_port,
                ui_codec_endpoint=settings.codec_endpoint,
            )
            log.info(
                "started an embedded Temporal dev server on %s (data in %s, process group %d): "
                "it stops when this worker stops, even if the worker is killed",
                server.address,
                settings.dev_server_db,
                server.process_group,
            )
            connection = connection.with_target(address=server.address)
    resources = contextlib.AsyncExitStack()  # the payload store's client
    address = connection.address or DEFAULT_ADDRESS
    reused = not configured and server is None
    memory: MemoryStore | None = None
    try:
        store = store_spec(settings.payload_store, server_configured=configured)
        storage = await resources.enter_async_context(external_storage(store))
        client = await connect_with_settings(
            settings,
            connection,
            interceptors=tracing_interceptors(settings),
            external_storage=storage,
        )
        if store.on:
            log.info(
                "payloads of %d KiB or more are stored outside history in %s (every worker, "
                "`agent` command and codec server needs AGENT_PAYLOAD_STORE=%s)",
                THRESHOLD // 1024,
                store.describe(),
                store.describe(),
            )
        if settings.payload_key:
            log.info(
                "payloads are encrypted (key id %r): decode them with `python -m "
                "durable_agents.runtime.codec_server` and `--codec-endpoint` on temporal commands",
                settings.payload_key_id,
            )
        model = chat_model_for(settings)
        if settings.uses_demo_model:
            log.warning(
                "OPENAI_API_KEY is not set: using the built-in OFFLINE DEMO MODEL "
                "(arithmetic -> calculator, time questions -> current_time). "
                "Set OPENAI_API_KEY (and OPENAI_BASE_URL, MODEL) to use a real model."
            )
        else:
            log.info(
                "model: %s at %s",
                model.default_model,
                settings.openai_base_url or "https://api.openai.com/v1",
            )
        settings.workspace.mkdir(parents=True, exist_ok=True)
        memory = await open_memory_store(  # connects, creates or migrates the schema
            url=(
                settings.memory_database_url.get_secret_value()
                if settings.memory_database_url
                else None
            ),
            path=settings.memory_database_path,
        )
        log.info("long-term memory (remember, recall, forget): %s", memory.description)
        workers = build_workers(
            client,
            task_queue=settings.task_queue,
            model=model,
            catalog=catalog.with_search_attributes(
                await search_attributes.ensure(client)
            ).with_command_server(command_server(settings, client.namespace)),
            workspace=settings.workspace.resolve(),
            drain_seconds=settings.drain_seconds,
            policy=WorkerPolicy(allow_run_auto_approve=settings.allow_run_auto_approve),
            mcp=mcp,
            memory=memory,
            tuning=WorkerTuning(cache_affinity=settings.cache_affinity),
            deployment=deployment_config(settings),
            large_payloads=store.on,
            deps=deps,
        )
        if settings.deployment_name is not None:
            log.info(
                "Worker Deployment %s, build id %s (AgentWorkflow pinned, SessionWorkflow "
                "auto-upgrade): make it current with `temporal worker deployment "
                "set-current-version --deployment-name %s --build-id %s`",
                settings.deployment_name,
                settings.build_id,
                settings.deployment_name,
                settings.build_id,
            )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with contextlib.AsyncExitStack() as stack:
            if mcp is not None:  # stops the stdio servers after the workers drained
                await stack.enter_async_context(mcp)
            for worker in workers:
                await stack.enter_async_context(worker)
            cli = temporal_command()
            shown = None if configured else address  # else the CLI reads the same settings
            ui_url = await started_web_ui(address, settings, server)
            web_ui = f"Web UI: {ui_url}\n" if ui_url else ""
            stops_too = "."
            if server is not None:
                stops_too = " and the embedded server."
            elif reused:
                stops_too = f" (not the server at {address}: this worker did not start it)."
            print(
                f"\nWorker ready on task queue {settings.task_queue!r} at {address} "
                f"with tools: {', '.join(catalog.tools.names())}\n"
                f"{agents_line(agents)}"
                f"{web_ui}"
                f"Start an agent:\n  {start_command(settings, shown, cli)}\n"
                f"Its result:\n  {cli} "
                f"{shlex.join(['workflow', 'result', *address_flag(shown)])}"
                " --workflow-id agent-demo-1\n"
                f"Ctrl-C stops the worker{stops_too}",
                flush=True,
            )
            await stop.wait()
            log.info("stopping: draining in-flight work")
    finally:
        if memory is not None:  # after the workers drained
            await memory.close()
        await resources.aclose()
        if server is not None:
            server.stop()


def agents_line(agents: Sequence[Agent[Any]]) -> str:
    """The banner's line naming the application's agents (none: no line)."""
    if not agents:
        return ""
    return f"and agents: {', '.join(agent.name for agent in agents)}\n"


def main(agents: Sequence[Agent[Any]] = (), deps: Any = None) -> None:
    """The worker process: settings from the environment, then `serve` until a signal.
    `agents` and `deps`: the application's own (see the top-level worker.py)."""
    try:
        settings = EnvironmentSettings.from_env()
    except SettingsError as error:
        configure_logging()
        log.error("worker not started: %s", error)
        sys.exit(1)
    configure_logging(settings.log_level, settings.log_format)
    try:
        asyncio.run(serve(settings, agents, deps))
        code = 0
    except Exception as error:  # one clear line, not a traceback, for start-up problems
        log.error("worker stopped: %s", error)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    # Exit without interpreter finalisation: the SDK's runtime can crash there
    # (PyGILState_Release, sdk-python#300) after an otherwise clean shutdown.
    os._exit(code)


if __name__ == "__main__":
    main()
