"""Callees that run as one Temporal activity per call, named after the tool (the worker's own
tools and MCP servers' tools): the activity's options, and how its failure reads to the model.

A failure becomes an `Error: ...` observation (a timeout, the tool's own error, retries used
up), unless the tool is set to stop the run (`on_error="stop"`).
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    RetryState,
    TimeoutError,
    TimeoutType,
    is_cancelled_exception,
)
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from contracts.errors import TOOL_ERROR, TOOL_FAILED_RUN
    from contracts.mcp import McpCallRequest
    from contracts.tool_io import ToolInvocation, ToolOutput
    from loop.observations import ToolFailure, failure_observation
    from tools.definition import ToolOptions
    from workflows.callees.protocol import CallResult


def tool_failure(error: ActivityError, options: ToolOptions) -> ToolFailure:
    """Read a failed tool activity into plain terms for the observation."""
    cause = error.cause
    if isinstance(cause, TimeoutError):
        limit = (
            options.heartbeat_timeout
            if cause.type == TimeoutType.HEARTBEAT
            else options.start_to_close_timeout
        )
        return ToolFailure("timeout", cause.message, timeout_seconds=limit.total_seconds())
    message = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
    if isinstance(cause, ApplicationError) and cause.type == TOOL_ERROR:
        return ToolFailure("tool_error", message)
    if error.retry_state == RetryState.MAXIMUM_ATTEMPTS_REACHED:
        attempts = options.effective_retry_policy.maximum_attempts
        return ToolFailure("retries_exhausted", message, attempts=attempts)
    return ToolFailure("tool_error", message)


async def run_activity(
    name: str,
    options: ToolOptions,
    activity_input: ToolInvocation | McpCallRequest,
    summary: str,
) -> ToolOutput:
    """The call as a regular activity of type `name`, on the tool's task queue."""
    output: ToolOutput = await workflow.execute_activity(
        name,
        activity_input,
        result_type=ToolOutput,
        start_to_close_timeout=options.start_to_close_timeout,
        heartbeat_timeout=options.heartbeat_timeout,
        retry_policy=options.effective_retry_policy,
        task_queue=options.task_queue,
        cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        summary=summary,
    )
    return output


def activity_result(output: ToolOutput) -> CallResult:
    return CallResult(output.content, "ok", output.stop_run, truncated=output.truncated)


def failed_result(name: str, options: ToolOptions, error: ActivityError) -> CallResult:
    """A failed call's result: an `Error: ...` observation, or the run's end for a tool set
    to stop it. A cancellation is re-raised: the run is being cancelled."""
    if is_cancelled_exception(error):
        raise error
    observation = failure_observation(tool_failure(error, options))
    if options.on_error == "stop":
        raise ApplicationError(
            f"tool {name} failed and is set to stop the run: {observation}",
            type=TOOL_FAILED_RUN,
            non_retryable=True,
        ) from error
    return CallResult(observation, "error")
