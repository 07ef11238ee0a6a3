"""One activity per registered tool, whose activity type is the tool's name, so the history and
the Web UI show `calculator` with its arguments and its result."""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agents.activities.activity_events import ToolProgressEvents
from durable_agents.activities.heartbeat import with_heartbeats
from durable_agents.contracts.errors import TOOL_ERROR
from durable_agents.contracts.payload_limits import limits_context_of
from durable_agents.contracts.tool_io import ToolInvocation, ToolOutput
from durable_agents.loop.observations import truncate_observation
from durable_agents.loop.validation_errors import describe_validation_error
from durable_agents.tools.definition import (
    StopRun,
    Tool,
    ToolContext,
    ToolError,
    TransientToolError,
)
from durable_agents.tools.memory_store import MemoryStore


def render_result(result: Any) -> str:
    """A tool's return value as text for the model: strings as they are, the rest as JSON."""
    if isinstance(result, str):
        return result
    if hasattr(result, "model_dump_json"):
        return str(result.model_dump_json())
    return json.dumps(result, ensure_ascii=False, default=str)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Transport errors of the HTTP clients a tool is likely to use: httpx, and httpx2 (which
    the `openai` client brings), whichever are installed."""
    found: list[type[BaseException]] = []
    for module in ("httpx", "httpx2"):
        try:
            found.append(importlib.import_module(module).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    TransientToolError,
    ConnectionError,
    TimeoutError,
    *_transport_errors(),
)


def is_transient(error: BaseException) -> bool:
    """A failure of the world around the tool, worth retrying: the error itself or what it was
    raised from (`raise TransientToolError(...) from error` marks any error transient)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, TRANSIENT_ERRORS):
            return True
        seen = seen.__cause__
    return False


def failure_text(error: BaseException) -> str:
    """An unexpected exception as the model reads it: its type and message."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


OutputKeeper = Callable[[str, str], str | None]
"""Keeps a call's output (idempotency key, content) for the run's next model call: the name of
the worker that keeps it, or None (`ModelActivities.keep_output`)."""


def tool_activity(
    item: Tool,
    workspace: Path,
    memory: MemoryStore | None = None,
    large_payloads: bool = False,
    keep: OutputKeeper | None = None,
    deps: Any = None,
) -> Callable[[ToolInvocation], Any]:
    """Wrap `item` as an activity: validate arguments, run with heartbeats (none when it runs
    as a local activity), truncate output.
    The tool sees `workspace` and the worker's `memory` store in its `ToolContext`, and
    reports progress with `ctx.progress(...)` (heartbeat details and a `tool_progress` event on
    the run's stream, which opens at the first report: a tool that never reports costs nothing).
    `large_payloads`: the worker stores large payloads outside history, so the arguments are
    checked against the raised limits (`contracts.payload_limits`), and the tool is told.
    `keep`: the worker keeps what the call returns for the run's next model call, so the
    output is recorded once (`activities.kept_outputs`).
    `deps`: the application's dependencies, handed to the tool as `ctx.deps` (worker-side only).

    `ToolError`, invalid arguments and any other failure of the tool's own logic fail the
    activity as a non-retryable `ToolError`, so the message goes straight back to the model.
    Transient failures (see `is_transient`) are raised as they are, so Temporal retries them;
    so is everything else when the tool opted into a retry policy.
    """
    heartbeat_every = min(1.0, item.options.lost_worker_timeout.total_seconds() / 4)

    async def run_tool(invocation: ToolInvocation) -> ToolOutput:
        info = activity.info()
        try:
            args = item.args_model.model_validate(
                invocation.args, context=limits_context_of(large_payloads)
            )
        except ValidationError as error:
            raise ApplicationError(
                f"invalid arguments for {item.name}: {describe_validation_error(error)}",
                type=TOOL_ERROR,
                non_retryable=True,
            ) from None
        progress = ToolProgressEvents(
            tool=item.name, call_id=invocation.call_id, turn=invocation.turn
        )
        ctx: ToolContext[Any] = ToolContext(
            workspace=workspace,
            workflow_id=info.workflow_id,
            call_id=invocation.call_id,
            idempotency_key=invocation.idempotency_key,
            scope=invocation.scope,
            memory=memory,
            reporter=progress.report,
            large_payloads=large_payloads,
            deps=deps,
        )
        started = time.monotonic()
        try:
            work = item.invoke(args, ctx)
            # A local activity (`ToolOptions.local`) is not heartbeated: the server does not know
            # it (the worker logs "Activity heartbeat failed ... UnknownActivity"), its
            # start-to-close timeout bounds it, and a cancellation reaches it in this worker.
            result = await (
                work
                if info.is_local
                else with_heartbeats(work, heartbeat_every, details=progress.details)
            )
        except Exception as error:
            if not isinstance(error, ToolError) and (
                is_transient(error) or item.options.retries_everything
            ):
                raise  # Temporal retries it per the tool's retry policy
            message = str(error) if isinstance(error, ToolError) else failure_text(error)
            activity.logger.info(
                "tool %s call %s failed: %s",
                item.name,
                invocation.call_id,
                message,
                extra={"agent": {"tool": item.name, "call_id": invocation.call_id,
                                 "outcome": "tool_error"}},
            )  # fmt: skip
            raise ApplicationError(message, type=TOOL_ERROR, non_retryable=True) from None
        finally:
            if progress.opened:  # the last report reaches the run before the call's end
                await progress.close(cancelling=True)
        stop_run = isinstance(result, StopRun)
        text = result.answer if isinstance(result, StopRun) else render_result(result)
        content, truncated = truncate_observation(text, invocation.max_output_chars)
        latency_ms = int((time.monotonic() - started) * 1000)
        activity.logger.info(
            "tool %s call %s finished in %d ms: %d chars%s",
            item.name,
            invocation.call_id,
            latency_ms,
            len(text),
            " (truncated)" if truncated else "",
            extra={
                "agent": {
                    "tool": item.name,
                    "call_id": invocation.call_id,
                    "outcome": "ok",
                    "latency_ms": latency_ms,
                    "chars": len(text),
                    "truncated": truncated,
                }
            },
        )
        kept_by = (
            keep(invocation.idempotency_key, content)
            if keep and invocation.keep_output and not stop_run
            else None
        )
        return ToolOutput(
            content=content,
            truncated=truncated,
            original_chars=len(text),
            stop_run=stop_run,
            kept_by=kept_by,
        )

    run_tool.__name__ = run_tool.__qualname__ = f"tool_{item.name}"
    return activity.defn(name=item.name)(run_tool)


def tool_activities(
    tools: Iterable[Tool],
    workspace: Path,
    memory: MemoryStore | None = None,
    large_payloads: bool = False,
    keep: OutputKeeper | None = None,
    deps: Any = None,
) -> list[Callable[[ToolInvocation], Any]]:
    """One activity per tool in `tools` (question tools have none: a person answers them)."""
    return [
        tool_activity(item, workspace, memory, large_payloads, keep, deps)
        for item in tools
        if not item.asks_user
    ]
