"""One benchmark worker in a process of its own, so its CPU time and memory are its own:

    python -m bench.worker_proc --kind ours|naive --address HOST:PORT --task-queue Q \
        --model-url URL [--tuning JSON] [--no-streaming]

`ours` is the application's worker (`runtime.workers.build_workers`, the real `openai` client
in `OpenAIChatModel`, the benchmark tools registered); `naive` is a default `Worker` running
`bench.naive_workflow` and `bench.naive_activities`. It prints `READY` once polling and stops
on SIGTERM. Logging is at WARNING for both (neither pays for log lines).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import signal
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

import testkit.fixed_output  # noqa: F401  (registers fixed_output)
from durable_agents.activities.context_cache import ContextCache
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.runtime.workers import WorkerTuning, build_workers
from durable_agents.tools.catalog import CATALOG


async def serve(args: argparse.Namespace) -> None:
    client = await Client.connect(args.address, data_converter=pydantic_data_converter)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    async with AsyncExitStack() as stack:
        if args.kind == "naive":
            from bench.naive_activities import ACTIVITIES
            from bench.naive_workflow import NAIVE_WORKFLOWS

            os.environ["OPENAI_BASE_URL"] = args.model_url
            os.environ["OPENAI_API_KEY"] = "sk-bench"
            workers = [
                Worker(
                    client,
                    task_queue=args.task_queue,
                    workflows=NAIVE_WORKFLOWS,
                    activities=ACTIVITIES,
                )
            ]
        else:
            model = OpenAIChatModel(
                api_key="sk-bench",
                base_url=args.model_url,
                default_model="fake-model",
                streaming=not args.no_streaming,
            )
            stack.push_async_callback(model.close)
            workspace = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            workers = build_workers(
                client,
                task_queue=args.task_queue,
                model=model,
                catalog=CATALOG,
                workspace=workspace,
                context_cache=ContextCache(),
                tuning=WorkerTuning(**json.loads(args.tuning)),
            )
        for worker in workers:
            await stack.enter_async_context(worker)
        if args.gc_threshold:  # a lever: fewer collections of the youngest generation
            gc.freeze()
            gc.set_threshold(args.gc_threshold, 20, 20)
        print("READY", flush=True)
        await stop.wait()


def use_sdk_create() -> None:
    """Patch `OpenAIChatModel._post` back to `chat.completions.create` (a measured lever)."""

    async def post(self: OpenAIChatModel, body: dict[str, Any]) -> Any:
        return await self._client.chat.completions.create(**body)

    OpenAIChatModel._post = post  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.worker_proc")
    parser.add_argument("--kind", choices=["ours", "naive"], required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--model-url", required=True)
    parser.add_argument("--tuning", default="{}", help="WorkerTuning fields as JSON (ours)")
    parser.add_argument("--no-streaming", action="store_true", help="ours: plain requests")
    parser.add_argument("--profile", help="write a cProfile of the worker to this file")
    parser.add_argument("--gc-threshold", type=int, default=0, help="gc generation 0 threshold")
    parser.add_argument(
        "--sdk-create",
        action="store_true",
        help="ours: send through chat.completions.create (the SDK's request transform), as "
        "before the change BENCHMARKS.md measures",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    if args.sdk_create:
        use_sdk_create()
    if args.profile:
        import cProfile

        with cProfile.Profile() as profile:
            asyncio.run(serve(args))
        profile.dump_stats(args.profile)
    else:
        asyncio.run(serve(args))
    sys.stdout.flush()
    os._exit(0)  # (the SDK's interpreter-exit crash after a clean shutdown: stack notes)


if __name__ == "__main__":
    main()
