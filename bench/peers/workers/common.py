"""What every peer worker process shares: its command line, its connection, READY on stdout,
stop on SIGTERM (the same contract as `bench.worker_proc`), the benchmark tools' bodies, and
what every peer workflow takes and does.

The tools are the project's own implementations, so every system runs the same code:
`calculator` is `tools.builtin.calculator.evaluate` + `format_result`, `fixed_output` is
`testkit.fixed_text.fixed_text` (2,000 characters, distinct per call), `write_file` (the tool
that needs approval) writes nothing and answers like ours. Timeouts and retries are ours:
model calls 120 s per attempt, 5 attempts, backoff 1 s x2 up to 60 s; tools 3 attempts, backoff
1 s x2 up to 30 s, `calculator` 5 s and the others 10 s (`contracts.agent_input`,
`tools.definition.TRANSIENT_RETRY`, `tools.builtin.calculator`, `testkit.fixed_output`).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.worker import Worker

from durable_agents.tools.builtin.calculator import evaluate, format_result
from testkit.fixed_text import fixed_text

MODEL_NAME = "fake-model"
API_KEY = "sk-bench"
MODEL_TIMEOUT = timedelta(seconds=120)
MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=5,
)
TOOL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=3,
)
CALCULATOR_TIMEOUT = timedelta(seconds=5)
TOOL_TIMEOUT = timedelta(seconds=10)
PASSTHROUGH = ("bench", "tools", "testkit", "contracts")
"""Modules a `+pt` variant passes through the sandbox (ours passes its project's through)."""


def calculate(expression: str) -> str:
    """The `calculator` tool's body: ours."""
    return format_result(evaluate(expression))


def fixed(n: int, chars: int = 2000) -> str:
    """The `fixed_output` tool's body: ours."""
    return fixed_text(n, chars)


def wrote(path: str, content: str) -> str:
    """What `write_file` answers once approved (ours: `wrote N bytes to PATH`)."""
    return f"wrote {len(content)} bytes to {path}"


def run_limit(params: dict[str, Any]) -> int:
    """Most model calls a run may make: the workflow input's `max_turns` (ours: the same)."""
    return int(params.get("max_turns", 10))


class Conversation:
    """What the peers' session workflows share (issue 36's prompt-cache session,
    `bench.peers.cache`): each turn is a `send` update of their own; the run ends once `close`
    is signalled and the last turn has ended."""

    _closed = False

    @workflow.signal
    def close(self) -> None:
        self._closed = True

    async def until_closed(self) -> None:
        await workflow.wait_condition(lambda: self._closed and workflow.all_handlers_finished())


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--variant", default="docs", help="docs (as documented) or a lever")
    return parser.parse_args(argv)


def sandbox_runner(variant: str) -> dict[str, Any]:
    """`workflow_runner` for a `+pt` variant (the bench modules passed through), else the
    SDK's default sandbox (what every peer's docs use)."""
    if "pt" not in variant.split("+"):
        return {}
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH)
    return {"workflow_runner": SandboxedWorkflowRunner(restrictions=restrictions)}


def model_env(model_url: str) -> dict[str, str]:
    """The environment a peer worker starts with: every peer's OpenAI client reads the model's
    address and key from it, and the OpenAI Agents SDK's trace export (to OpenAI's servers,
    unreachable here, and work ours does not do) is switched off."""
    return {
        "OPENAI_BASE_URL": model_url,
        "OPENAI_API_KEY": API_KEY,
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }


def serve_with(
    plugins: Callable[[str], list[Any]],
    workflows: Sequence[type],
    activities: Sequence[Callable[..., Any]] = (),
) -> None:
    """`serve` a peer's worker: a client with the peer's plugins for the variant asked for, its
    workflows and activities, the variant's sandbox."""

    async def build(args: argparse.Namespace) -> Worker:
        client = await Client.connect(args.address, plugins=plugins(args.variant))
        return Worker(
            client,
            task_queue=args.task_queue,
            workflows=workflows,
            activities=activities,
            **sandbox_runner(args.variant),
        )

    serve(build)


def serve(build: Callable[[argparse.Namespace], Awaitable[Worker]]) -> None:
    """Run the worker `build` makes until SIGTERM, printing READY once it polls."""
    args = parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")

    async def main() -> None:
        worker = await build(args)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        async with worker:
            print("READY", flush=True)
            await stop.wait()

    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)  # (the SDK's interpreter-exit crash after a clean shutdown: stack notes)
