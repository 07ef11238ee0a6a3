"""Callees that run as one Temporal activity per call, named after the tool (the worker's own
tools and MCP servers' tools): the activity's options, and how its failure reads to the model.

A failure becomes an `Error: ...` observation (a timeout, the tool's own error, retries used
up), unless the tool is set to stop the run (`on_error="stop"`).

A timed-out attempt is not retried (seed 001: a tool that times out becomes `Error: timed out`
for the agent; seed 003: a timeout is not a transport error, and retrying re-runs the slow
logic), unless the tool opts in (its own `retry_policy`, or `retry_on_timeout=True`:
`ToolOptions.retries_timeouts`): then its observation names the attempts (`Error: timed out
after 30s (3 attempts)`). A heartbeat timeout (the worker was
lost mid-call) is still retried like a transport failure.
"""

from __future__ import annotations

import dataclasses

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    FailureError,
    RetryState,
    TimeoutError,
    TimeoutType,
    is_cancelled_exception,
)
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.errors import TOOL_ERROR, TOOL_FAILED_RUN
    from durable_agents.contracts.mcp import McpCallRequest
    from durable_agents.contracts.tool_io import ToolInvocation, ToolOutput
    from durable_agents.loop.kept_outputs import KeptOutput
    from durable_agents.loop.observations import ToolFailure, failure_observation
    from durable_agents.tools.definition import ToolOptions
    from durable_agents.workflows.callees.protocol import CallResult


START_TO_CLOSE_TIMEOUT = "TemporalTimeout:StartToClose"
"""How a retry policy's `non_retryable_error_types` names an attempt's start-to-close timeout
(the server matches `TemporalTimeout:<timeout type>`; local activities do not honour it)."""


def activity_retry_policy(options: ToolOptions) -> RetryPolicy:
    """The retry policy a tool's activity is scheduled with: the tool's (`ToolOptions.
    effective_retry_policy`), and a start-to-close timeout final unless the tool opts into
    retrying it (`ToolOptions.retries_timeouts`).

    Not behind a patch: the retry policy is an option of the scheduling command that replay
    does not compare (Temporal lets an operator change it on a running activity too), so runs
    recorded before replay as they ran; a call scheduled after the upgrade times out at once."""
    policy = options.effective_retry_policy
    if options.retries_timeouts:
        return policy
    never = [*(policy.non_retryable_error_types or []), START_TO_CLOSE_TIMEOUT]
    return dataclasses.replace(policy, non_retryable_error_types=never)


def failure_detail(error: FailureError) -> str:
    """What a failed activity or child workflow says went wrong: its cause's own message for an
    application error, else the cause (or the error) as text."""
    cause = error.cause
    return cause.message if isinstance(cause, ApplicationError) else str(cause or error)


def tool_failure(error: ActivityError, options: ToolOptions) -> ToolFailure:
    """Read a failed tool activity into plain terms for the observation."""
    cause = error.cause
    if isinstance(cause, TimeoutError):
        limit = (
            options.lost_worker_timeout
            if cause.type == TimeoutType.HEARTBEAT
            else options.start_to_close_timeout
        )
        attempts = 1
        if options.retries_timeouts and error.retry_state == RetryState.MAXIMUM_ATTEMPTS_REACHED:
            attempts = options.effective_retry_policy.maximum_attempts
        return ToolFailure(
            "timeout", cause.message, timeout_seconds=limit.total_seconds(), attempts=attempts
        )
    message = failure_detail(error)
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
        heartbeat_timeout=options.lost_worker_timeout,
        retry_policy=activity_retry_policy(options),
        task_queue=options.task_queue,
        cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        summary=summary,
    )
    return output


def activity_result(output: ToolOutput, ref: str | None = None) -> CallResult:
    """A finished call's result; `ref` is the call's idempotency key, under which the worker
    that ran it keeps its output if it says so (`ToolOutput.kept_by`)."""
    kept = (
        KeptOutput(ref, output.kept_by, output.content)
        if ref is not None and output.kept_by is not None
        else None
    )
    return CallResult(output.content, "ok", output.stop_run, truncated=output.truncated, kept=kept)


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
