"""One activity per registered tool, whose activity type is the tool's name, so the history and
the Web UI show `calculator` with its arguments and its result."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import with_heartbeats
from contracts.errors import TOOL_ERROR
from contracts.tool_io import ToolInvocation, ToolOutput
from loop.input_validation import describe_validation_error
from loop.observations import truncate_observation
from tools.definition import StopRun, Tool, ToolContext, ToolError


def render_result(result: Any) -> str:
    """A tool's return value as text for the model: strings as they are, the rest as JSON."""
    if isinstance(result, str):
        return result
    if hasattr(result, "model_dump_json"):
        return str(result.model_dump_json())
    return json.dumps(result, ensure_ascii=False, default=str)


def tool_activity(item: Tool, workspace: Path) -> Callable[[ToolInvocation], Any]:
    """Wrap `item` as an activity: validate arguments, run with heartbeats, truncate output.

    `ToolError` and invalid arguments fail the activity as non-retryable `ToolError`, so the
    message goes straight back to the model; any other exception is retried per the tool's
    retry policy.
    """
    heartbeat_every = min(1.0, item.options.heartbeat_seconds / 4)

    async def run_tool(invocation: ToolInvocation) -> ToolOutput:
        info = activity.info()
        try:
            args = item.args_model.model_validate(invocation.args)
        except ValidationError as error:
            raise ApplicationError(
                f"invalid arguments for {item.name}: {describe_validation_error(error)}",
                type=TOOL_ERROR,
                non_retryable=True,
            ) from None
        ctx = ToolContext(
            workspace=workspace,
            workflow_id=info.workflow_id,
            call_id=invocation.call_id,
            idempotency_key=invocation.idempotency_key,
        )
        started = time.monotonic()
        try:
            result = await with_heartbeats(item.invoke(args, ctx), heartbeat_every)
        except ToolError as error:
            activity.logger.info(
                "tool %s call %s refused: %s",
                item.name,
                invocation.call_id,
                error,
                extra={"agent": {"tool": item.name, "call_id": invocation.call_id,
                                 "outcome": "tool_error"}},
            )  # fmt: skip
            raise ApplicationError(str(error), type=TOOL_ERROR, non_retryable=True) from None
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
        return ToolOutput(
            content=content, truncated=truncated, original_chars=len(text), stop_run=stop_run
        )

    run_tool.__name__ = run_tool.__qualname__ = f"tool_{item.name}"
    return activity.defn(name=item.name)(run_tool)


def tool_activities(
    tools: Iterable[Tool], workspace: Path
) -> list[Callable[[ToolInvocation], Any]]:
    """One activity per tool in `tools` (question tools have none: a person answers them)."""
    return [tool_activity(item, workspace) for item in tools if not item.asks_user]
