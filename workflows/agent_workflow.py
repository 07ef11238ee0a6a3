"""`AgentWorkflow`: the tool-calling loop as a deterministic Temporal workflow.

model -> tool calls -> observations -> model ... until an answer. The workflow only decides (with
the pure functions in `loop/`) and schedules activities: `call_model` for every model turn, and
one activity named after the tool for every tool call, several at once when the model asks for
several. Its state between rounds lives in the workflow history; nothing else is persisted.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    RetryState,
    TimeoutError,
    TimeoutType,
)

with workflow.unsafe.imports_passed_through():
    from contracts.agent_input import AgentInput
    from contracts.agent_result import AgentResult, StopReason, ToolStep
    from contracts.agent_status import AgentStatus, Phase
    from contracts.errors import (
        INVALID_INPUT,
        MODEL_CALL_FAILED,
        MODEL_REQUEST_REJECTED,
        TOOL_ERROR,
        TOOL_FAILED_RUN,
    )
    from contracts.messages import ChatMessage
    from contracts.model_io import CALL_MODEL_ACTIVITY, ModelReply, ModelRequest
    from contracts.tool_io import ToolInvocation, ToolOutput
    from contracts.usage import TokenUsage
    from loop.conversation import append_round, start_conversation
    from loop.input_validation import InvalidAgentInput, validate_agent_input
    from loop.limits import max_iterations_message, may_run_tools
    from loop.model_reply import AskAgain, FinalAnswer, normalize_reply, read_final_answer
    from loop.observations import ToolFailure, failure_observation
    from loop.summaries import model_call_summary, tool_call_summary
    from loop.tool_requests import PlannedCall, RefusedCall, plan_tool_calls
    from tools.catalog import REGISTRY
    from tools.definition import Tool

MODEL_HEARTBEAT_TIMEOUT = timedelta(seconds=30)
RECENT_STEPS_IN_STATUS = 5


def tool_failure(error: ActivityError, item: Tool) -> ToolFailure:
    """Read a failed tool activity into plain terms for the observation."""
    cause = error.cause
    if isinstance(cause, TimeoutError):
        seconds = (
            item.options.heartbeat_seconds
            if cause.type == TimeoutType.HEARTBEAT
            else item.options.timeout_seconds
        )
        return ToolFailure("timeout", cause.message, timeout_seconds=seconds)
    message = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
    if isinstance(cause, ApplicationError) and cause.type == TOOL_ERROR:
        return ToolFailure("tool_error", message)
    if error.retry_state == RetryState.MAXIMUM_ATTEMPTS_REACHED:
        return ToolFailure("retries_exhausted", message, attempts=item.options.retry.max_attempts)
    return ToolFailure("tool_error", message)


@workflow.defn(name="AgentWorkflow")
class AgentWorkflow:
    """Runs one agent task to an answer. Input: `AgentInput` as JSON; result: `AgentResult`."""

    def __init__(self) -> None:
        self._status = AgentStatus()

    @workflow.query(name="status")
    def status(self) -> AgentStatus:
        """Where the run is: phase, iteration, usage and the most recent steps."""
        return self._status

    @workflow.run
    async def run(self, raw_input: Any) -> AgentResult:
        # The input arrives untyped on purpose: if the SDK decoded it into AgentInput, bad CLI
        # JSON would fail the workflow *task* and retry forever; here it fails the run at once.
        try:
            params = validate_agent_input(raw_input, REGISTRY.names())
        except InvalidAgentInput as error:
            raise ApplicationError(str(error), type=INVALID_INPUT, non_retryable=True) from None

        tools = REGISTRY.select(params.tools)
        by_name = {t.name: t for t in tools}
        schemas = [t.schema() for t in tools]
        messages = start_conversation(params)
        usage = TokenUsage()
        steps: list[ToolStep] = []
        model_name = params.model or ""
        nudged = False
        self._status = AgentStatus(max_iterations=params.max_iterations, model=params.model)
        workflow.logger.info(
            "agent run started: model=%s tools=%s max_iterations=%d",
            params.model or "(worker default)",
            ",".join(by_name) or "none",
            params.max_iterations,
        )

        for iteration in range(1, params.max_iterations + 1):
            self._set_phase("thinking", iteration)
            reply = await self._call_model(params, messages, schemas, iteration)
            reply = normalize_reply(reply, iteration)
            usage = usage + reply.usage
            model_name = reply.model
            self._status = self._status.model_copy(update={"usage": usage, "model": model_name})

            if not reply.tool_calls:
                decision = read_final_answer(reply, already_nudged=nudged)
                if isinstance(decision, AskAgain):
                    nudged = True
                    messages = [*messages, decision.nudge]
                    continue
                stop: StopReason = (
                    "completed" if isinstance(decision, FinalAnswer) else ("empty_answer")
                )
                return self._finish(decision.text, stop, iteration, steps, usage, model_name)
            nudged = False

            if not may_run_tools(iteration, params.max_iterations):
                break
            self._set_phase("running_tools", iteration)
            planned = plan_tool_calls(
                reply.tool_calls, {name: t.args_model for name, t in by_name.items()}
            )
            round_steps = await asyncio.gather(
                *(self._run_call(p, by_name, params, iteration) for p in planned)
            )
            steps.extend(round_steps)
            self._status = self._status.model_copy(
                update={
                    "steps": len(steps),
                    "recent_steps": steps[-RECENT_STEPS_IN_STATUS:],
                }
            )
            messages = append_round(
                messages,
                reply.as_message(),
                [(s.call_id, s.observation) for s in round_steps],
            )

        return self._finish(
            max_iterations_message(params.max_iterations),
            "max_iterations",
            params.max_iterations,
            steps,
            usage,
            model_name,
        )

    async def _call_model(
        self,
        params: AgentInput,
        messages: list[ChatMessage],
        schemas: list[Any],
        iteration: int,
    ) -> ModelReply:
        request = ModelRequest(model=params.model, messages=messages, tools=schemas, turn=iteration)
        try:
            return await workflow.execute_activity(
                CALL_MODEL_ACTIVITY,
                request,
                result_type=ModelReply,
                start_to_close_timeout=timedelta(seconds=params.model_timeout_seconds),
                heartbeat_timeout=MODEL_HEARTBEAT_TIMEOUT,
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(seconds=1),
                    backoff_coefficient=2.0,
                    maximum_interval=timedelta(seconds=60),
                    maximum_attempts=params.model_max_attempts,
                    non_retryable_error_types=[MODEL_REQUEST_REJECTED],
                ),
                summary=model_call_summary(params.model, iteration),
            )
        except ActivityError as error:
            cause = error.cause
            detail = cause.message if isinstance(cause, ApplicationError | TimeoutError) else error
            raise ApplicationError(
                f"model call failed at turn {iteration}: {detail}",
                type=MODEL_CALL_FAILED,
                non_retryable=True,
            ) from error

    async def _run_call(
        self,
        planned: PlannedCall,
        by_name: dict[str, Tool],
        params: AgentInput,
        iteration: int,
    ) -> ToolStep:
        started = workflow.now()
        call = planned.call
        if isinstance(planned, RefusedCall):
            workflow.logger.info("tool call %s refused: %s", call.id, planned.observation)
            return ToolStep(
                iteration=iteration,
                call_id=call.id,
                tool=call.name,
                raw_arguments=call.arguments,
                args=None,
                observation=planned.observation,
                status="error",
                started_at=started,
                finished_at=started,
            )
        item = by_name[call.name]
        options = item.options
        invocation = ToolInvocation(
            call_id=call.id,
            tool=item.name,
            args=planned.args,
            idempotency_key=f"{workflow.info().workflow_id}/{iteration}/{call.id}",
            max_output_chars=params.max_observation_chars,
        )
        try:
            output = await workflow.execute_activity(
                item.name,
                invocation,
                result_type=ToolOutput,
                start_to_close_timeout=timedelta(seconds=options.timeout_seconds),
                heartbeat_timeout=timedelta(seconds=options.heartbeat_seconds),
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(seconds=options.retry.initial_interval_seconds),
                    backoff_coefficient=options.retry.backoff_coefficient,
                    maximum_interval=timedelta(seconds=options.retry.max_interval_seconds),
                    maximum_attempts=options.retry.max_attempts,
                    non_retryable_error_types=[TOOL_ERROR],
                ),
                task_queue=options.task_queue,
                summary=tool_call_summary(item.name, planned.args),
            )
            observation, status = output.content, "ok"
        except ActivityError as error:
            failure = tool_failure(error, item)
            observation = failure_observation(failure)
            if options.on_error == "stop":
                raise ApplicationError(
                    f"tool {item.name} failed and is set to stop the run: {observation}",
                    type=TOOL_FAILED_RUN,
                    non_retryable=True,
                ) from error
            status = "error"
        workflow.logger.info("tool %s call %s: %s", item.name, call.id, status)
        return ToolStep(
            iteration=iteration,
            call_id=call.id,
            tool=item.name,
            raw_arguments=call.arguments,
            args=planned.args,
            observation=observation,
            status=status,
            started_at=started,
            finished_at=workflow.now(),
        )

    def _set_phase(self, phase: Phase, iteration: int) -> None:
        self._status = self._status.model_copy(update={"phase": phase, "iteration": iteration})
        workflow.set_current_details(
            f"turn {iteration}/{self._status.max_iterations}: {phase.replace('_', ' ')} · "
            f"{self._status.usage.total_tokens} tokens · {self._status.steps} tool calls"
        )

    def _finish(
        self,
        answer: str,
        stop_reason: StopReason,
        iterations: int,
        steps: list[ToolStep],
        usage: TokenUsage,
        model: str,
    ) -> AgentResult:
        self._status = self._status.model_copy(
            update={"phase": "done", "stop_reason": stop_reason, "iteration": iterations}
        )
        workflow.set_current_details(
            f"done ({stop_reason}) after {iterations} turns · {usage.total_tokens} tokens"
        )
        workflow.logger.info(
            "agent run finished: stop_reason=%s iterations=%d tool_calls=%d tokens=%d",
            stop_reason,
            iterations,
            len(steps),
            usage.total_tokens,
        )
        return AgentResult(
            answer=answer,
            stop_reason=stop_reason,
            iterations=iterations,
            steps=steps,
            usage=usage,
            model=model,
        )
