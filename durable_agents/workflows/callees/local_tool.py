"""`LocalTool`: a tool compiled into the worker (`tools.definition.Tool`), run as its own
activity named after it, or as a local activity for a tool that opts in (`ToolOptions.local`)."""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, RetryState, TimeoutError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.model_io import ToolSchema
    from durable_agents.contracts.tool_io import ToolInvocation, ToolOutput
    from durable_agents.loop.summaries import tool_call_summary
    from durable_agents.loop.tool_requests import ArgsSchema
    from durable_agents.tools.definition import Tool, ToolOptions
    from durable_agents.workflows.callees.activity import (
        activity_result,
        failed_result,
        run_activity,
    )
    from durable_agents.workflows.callees.protocol import CallContext, CallResult


def local_activity_error(
    activity_type: str, failure: ApplicationError | TimeoutError, options: ToolOptions
) -> ActivityError:
    """A failed local tool's error, wrapped as a regular activity's would be (`local_failure`)."""
    return local_failure(activity_type, failure, options.effective_retry_policy)


def local_failure(
    activity_type: str, failure: ApplicationError | TimeoutError, policy: RetryPolicy
) -> ActivityError:
    """A failed local activity's error, wrapped as a regular activity's would be.

    The SDK raises a local activity's failure bare (an `ApplicationError`, not an
    `ActivityError` with it as the cause: sdk-core issue 323), without the retry state that
    says whether the retries were used up. A failure the policy may retry can only have ended
    the call once its attempts were used up; any other failure ended it at once."""
    if isinstance(failure, TimeoutError):
        retry_state = RetryState.TIMEOUT
    elif failure.non_retryable or failure.type in (policy.non_retryable_error_types or []):
        retry_state = RetryState.NON_RETRYABLE_FAILURE
    else:
        retry_state = RetryState.MAXIMUM_ATTEMPTS_REACHED
    error = ActivityError(
        "Local activity task failed",
        scheduled_event_id=0,
        started_event_id=0,
        identity="",
        activity_type=activity_type,
        activity_id="",
        retry_state=retry_state,
    )
    error.__cause__ = failure
    return error


class LocalTool:
    """A `Callee` for one of the worker's own tools."""

    def __init__(self, tool: Tool) -> None:
        self._tool = tool

    @property
    def name(self) -> str:
        return self._tool.name

    @property
    def options(self) -> ToolOptions:
        return self._tool.options

    @property
    def args_schema(self) -> ArgsSchema:
        return self._tool.args_model

    @property
    def definition(self) -> Tool:
        return self._tool

    @property
    def asks_user(self) -> bool:
        return self._tool.asks_user

    def schema(self) -> ToolSchema:
        return self._tool.schema()

    async def invoke(self, context: CallContext) -> CallResult:
        invocation = ToolInvocation(
            call_id=context.call.id,
            tool=self.name,
            args=context.args,
            idempotency_key=context.idempotency_key,
            max_output_chars=context.params.max_observation_chars,
            scope=context.params.memory_scope,
            turn=context.params.session.turn if context.params.session else None,
            keep_output=context.params.context_transfer != "full",
        )
        summary = tool_call_summary(context.args)
        try:
            return activity_result(
                await self._run(invocation, summary), ref=invocation.idempotency_key
            )
        except ActivityError as error:
            return failed_result(self.name, self.options, error)

    async def _run(self, invocation: ToolInvocation, summary: str) -> ToolOutput:
        """A local activity for a tool that opted in (`ToolOptions.local`), otherwise a regular
        one on the tool's task queue. Both fail with an `ActivityError` (see
        `local_activity_error`), so a failure reads the same way."""
        options = self.options
        if not options.local:
            return await run_activity(self.name, options, invocation, summary)
        try:
            output: ToolOutput = await workflow.execute_local_activity(
                self.name,
                invocation,
                result_type=ToolOutput,
                start_to_close_timeout=options.start_to_close_timeout,
                retry_policy=options.effective_retry_policy,
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                summary=summary,
            )
        except (ApplicationError, TimeoutError) as failure:
            raise local_activity_error(self.name, failure, options) from failure
        return output
