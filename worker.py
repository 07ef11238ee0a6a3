"""Run the agent worker: `python worker.py` (or `make run`).

Without TEMPORAL_ADDRESS it uses the server on localhost:7233 if one answers, else starts an
embedded dev server (Web UI on http://localhost:8233, data in .temporal/dev.db). Without
OPENAI_API_KEY it uses the offline demo model. Ctrl-C (or SIGTERM) drains and stops both.
See runtime/settings.py for every environment variable.
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
from pathlib import Path

from runtime.dev_server import DevServer, is_listening, temporal_cli
from runtime.log_format import configure_logging
from runtime.models import chat_model_for
from runtime.settings import WorkerSettings
from runtime.temporal_client import connect_with_settings
from runtime.tracing import tracing_interceptors
from runtime.workers import build_workers
from tools.catalog import REGISTRY

log = logging.getLogger("worker")


def address_flag(address: str) -> list[str]:
    """`--address X` unless X is the CLI's own default."""
    return [] if address == "localhost:7233" else ["--address", address]


def start_command(settings: WorkerSettings, address: str, cli: str) -> str:
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


async def serve(settings: WorkerSettings) -> None:
    for module in settings.tool_modules:  # they register their tools in REGISTRY on import
        importlib.import_module(module)
    server: DevServer | None = None
    address = settings.temporal_address
    port = settings.dev_server_port
    ui_url = f"http://localhost:{settings.dev_server_ui_port}"
    if address is None:
        if is_listening("127.0.0.1", port):
            address = f"localhost:{port}"
            log.info("using the Temporal server already listening on %s", address)
        else:
            log.info("no Temporal server on localhost:%d: starting an embedded dev server", port)
            server = DevServer.start(
                db_file=settings.dev_server_db,
                port=port,
                ui_port=settings.dev_server_ui_port,
                ui_codec_endpoint=settings.codec_endpoint,
            )
            address, ui_url = server.address, server.ui_url
    try:
        client = await connect_with_settings(
            settings, address, settings.temporal_namespace, interceptors=tracing_interceptors()
        )
        if settings.payload_key:
            log.info(
                "payloads are encrypted (key id %r): decode them with `python -m "
                "runtime.codec_server` and `--codec-endpoint` on temporal commands",
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
        workers = build_workers(
            client,
            task_queue=settings.task_queue,
            model=model,
            registry=REGISTRY,
            workspace=settings.workspace.resolve(),
            drain_seconds=settings.drain_seconds,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with contextlib.AsyncExitStack() as stack:
            for worker in workers:
                await stack.enter_async_context(worker)
            cli = shlex.quote(os.path.relpath(temporal_cli(), Path.cwd()))
            print(
                f"\nWorker ready on task queue {settings.task_queue!r} at {address} "
                f"with tools: {', '.join(REGISTRY.names())}\n"
                f"Web UI: {ui_url}\n"
                f"Start an agent:\n  {start_command(settings, address, cli)}\n"
                f"Its result:\n  {cli} "
                f"{shlex.join(['workflow', 'result', *address_flag(address)])}"
                " --workflow-id agent-demo-1\n"
                "Ctrl-C stops the worker" + (" and the embedded server." if server else "."),
                flush=True,
            )
            await stop.wait()
            log.info("stopping: draining in-flight work")
    finally:
        if server is not None:
            server.stop()


def main() -> None:
    configure_logging(os.environ.get("LOG_LEVEL", "INFO"), os.environ.get("LOG_FORMAT", "text"))
    try:
        asyncio.run(serve(WorkerSettings.from_env()))
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
