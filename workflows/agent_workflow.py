"""`AgentWorkflow`: the tool-calling loop as a deterministic Temporal workflow.

model -> tool calls -> observations -> model ... until an answer. The workflow only decides (with
the pure functions in `loop/`) and schedules activities: `call_model` for every model turn, and
one activity named after the tool for every tool call, several at once when the model asks for
several. Calls that need a person (approval, `ask_user`) wait durably in `HumanGate` while the
others run. State between rounds lives in the workflow history; nothing else is persisted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
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
    from pydantic import BaseModel

    from contracts.agent_input import AgentInput
    from contracts.agent_result import (
        AgentResult,
        ModelCall,
        StepStatus,
        StopReason,
        ToolStep,
    )
    from contracts.agent_status import AgentStatus, Phase
    from contracts.approvals import (
        DECISION_REFUSED,
        ApproveSignal,
        DecideUpdate,
        HumanDecision,
        PendingRequest,
        RejectSignal,
        ReplySignal,
    )
    from contracts.errors import (
        HUMAN_WAIT_TIMED_OUT,
        INVALID_INPUT,
        MAX_ITERATIONS_REACHED,
        MODEL_CALL_FAILED,
        MODEL_REQUEST_REJECTED,
        NO_PRICE_FOR_MODEL,
        TOOL_ERROR,
        TOOL_FAILED_RUN,
    )
    from contracts.messages import ChatMessage, ToolCall
    from contracts.model_io import (
        CALL_MODEL_ACTIVITY,
        ContextDelta,
        ModelReply,
        ModelRequest,
        ToolSchema,
    )
    from contracts.scratchpad import Scratchpad
    from contracts.session import TurnReport
    from contracts.tool_io import ToolInvocation, ToolOutput
    from loop import approvals
    from loop.budgets import NoPrice, budget_exceeded, budget_message, cost_of, price_for
    from loop.context_window import (
        ContextFit,
        clip_to_tokens,
        context_messages,
        fit_context,
        summary_request,
    )
    from loop.continuation import (
        MAX_KEPT_STEPS,
        compact_for_carry,
        compact_steps,
        keep_recent_steps,
    )
    from loop.conversation import append_round, start_conversation
    from loop.input_validation import (
        InvalidAgentInput,
        validate_agent_input,
    )
    from loop.limits import (
        FINAL_ANSWER_PROMPT,
        max_iterations_message,
        may_run_tools,
        should_continue_as_new,
    )
    from loop.model_reply import AskAgain, FinalAnswer, normalize_reply, read_final_answer
    from loop.observations import ToolFailure, failure_observation
    from loop.repetition import observe_round, repeated_calls_message, screen_round
    from loop.summaries import model_call_summary, shorten, tool_call_summary
    from loop.tool_requests import PlannedCall, RefusedCall, plan_tool_calls
    from tools.catalog import REGISTRY
    from tools.definition import Tool
    from workflows.human_gate import HumanGate
    from workflows.refusals import parse_or_ignore, parse_or_refuse, refuse

MODEL_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
RECENT_STEPS_IN_STATUS = 5
SignalT = TypeVar("SignalT", bound=BaseModel)


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
    """Runs one agent task to an answer. Input: `AgentInput` as JSON; result: `AgentResult`.

    Signals `approve`, `reject`, `reply` and update `decide` answer calls that wait for a
    person; queries `status` and `pending_approvals` show where the run is.
    """

    def __init__(self) -> None:
        self._status = AgentStatus()
        self._pad = Scratchpad(messages=[])
        self._sent_messages = 0  # messages the worker's context cache holds for this run
        self._gate = HumanGate(
            {t.name: t.args_model for t in REGISTRY.all()}, on_change=self._on_gate_change
        )
        self._params: AgentInput | None = None
        self._background: set[asyncio.Task[None]] = set()

    # -- queries -------------------------------------------------------------------------------

    @workflow.query(name="status")
    def status(self) -> AgentStatus:
        """Where the run is: phase, iteration, usage, pending requests, recent steps."""
        return self._status.model_copy(update={"pending": list(self._gate.pending.values())})

    @workflow.query(name="pending_approvals")
    def pending_approvals(self) -> list[PendingRequest]:
        """Calls waiting for a person, each with the CLI command that answers it."""
        return list(self._gate.pending.values())

    # -- decisions from people -----------------------------------------------------------------

    @workflow.signal(name="approve")
    def approve(self, raw: Any) -> None:
        """`{"call_id": "..."|"*", "args"?: {...}, "args_digest"?, "by"?, "comment"?}`"""
        self._apply("approve", ApproveSignal, raw, self._gate.approve)

    @workflow.signal(name="reject")
    def reject(self, raw: Any) -> None:
        """`{"call_id": "..."|"*", "reason"?: "...", "by"?: "..."}`"""
        self._apply("reject", RejectSignal, raw, self._gate.reject)

    @workflow.signal(name="reply")
    def reply(self, raw: Any) -> None:
        """`{"call_id": "..."|"*", "text": "...", "by"?: "..."}` answers an `ask_user` question."""
        self._apply("reply", ReplySignal, raw, self._gate.reply)

    @workflow.update(name="decide")
    def decide(self, raw: Any) -> HumanDecision:
        """`{"call_id", "decision": "approve"|"reject", "args"?, "reason"?, "by"?, "comment"?}`;
        returns the recorded decision."""
        update = parse_or_refuse(DecideUpdate, raw, "decide input", DECISION_REFUSED)
        try:
            return self._gate.decide(update)
        except approvals.DecisionRefused as error:
            refuse(str(error), DECISION_REFUSED)

    @decide.validator
    def validate_decide(self, raw: Any) -> None:
        """Refuse before anything enters history: unknown/decided ids, bad edited args, ..."""
        update = parse_or_refuse(DecideUpdate, raw, "decide input", DECISION_REFUSED)
        try:
            self._gate.check(update)
        except approvals.DecisionRefused as error:
            refuse(str(error), DECISION_REFUSED)

    def _apply(
        self, name: str, model: type[SignalT], raw: Any, apply: Callable[[SignalT], object]
    ) -> None:
        """Apply a signal; one that cannot apply is logged and ignored, never failing the run."""
        signal = parse_or_ignore(model, raw, name)
        if signal is None:
            return
        try:
            apply(signal)
        except approvals.DecisionRefused as error:
            workflow.logger.warning("signal %s ignored: %s", name, error)

    # -- the loop ------------------------------------------------------------------------------

    @workflow.run
    async def run(self, raw_input: Any) -> AgentResult:
        # The input arrives untyped on purpose: if the SDK decoded it into AgentInput, bad CLI
        # JSON would fail the workflow *task* and retry forever; here it fails the run at once.
        try:
            params = validate_agent_input(raw_input, REGISTRY.names())
        except InvalidAgentInput as error:
            refuse(str(error), INVALID_INPUT)
        self._params = params
        if params.resume is not None:
            self._pad = params.resume
        else:
            self._pad = Scratchpad(
                messages=start_conversation(params),
                model=params.model or "",
                prompt_index=1 + len(params.history),
            )
        self._status = AgentStatus(
            max_iterations=params.max_iterations,
            model=params.model,
            iteration=self._pad.iteration,
            usage=self._pad.usage,
            steps=len(self._pad.steps),
        )
        try:
            result = await self._loop(params)
        except BaseException as error:
            if isinstance(error, workflow.ContinueAsNewError):
                raise
            if not is_cancelled_exception(error):
                await self._report_to_session(params, error=error)
                raise
            pad = self._pad
            self._status = self._status.model_copy(update={"phase": "cancelled"})
            summary = (
                f"cancelled at turn {pad.iteration} after {len(pad.steps)} tool calls · "
                f"{pad.usage.total_tokens} tokens"
            )
            workflow.set_current_details(summary)
            self._log(
                "agent run %s", summary, outcome="cancelled", tools=[s.tool for s in pad.steps]
            )
            raise
        await self._report_to_session(params, result=result)
        return result

    async def _report_to_session(
        self,
        params: AgentInput,
        *,
        result: AgentResult | None = None,
        error: BaseException | None = None,
    ) -> None:
        """A session's turn tells its session how it ended (the session may have moved on to a
        new run by continue-as-new; a signal by workflow id reaches the current one)."""
        if params.session is None:
            return
        report = TurnReport(
            turn_id=params.session.turn_id,
            workflow_id=workflow.info().workflow_id,
            answer=result.answer if result else "",
            stop_reason=result.stop_reason if result else None,
            steps=compact_steps(result.steps, budget_chars=4_000) if result else [],
            usage=result.usage if result else self._pad.usage,
            error=None if error is None else str(error) or type(error).__name__,
        )
        await self._signal_session(params, "turn_finished", report)

    async def _signal_session(self, params: AgentInput, name: str, payload: Any) -> None:
        if params.session is None:
            return
        try:
            await workflow.get_external_workflow_handle(params.session.workflow_id).signal(
                name, payload
            )
        except Exception as error:  # the session may have ended; the run's own result stands
            workflow.logger.warning("could not signal session %s: %s", name, error)

    async def _loop(self, params: AgentInput) -> AgentResult:
        pad = self._pad
        tools = REGISTRY.select(params.tools)
        by_name = {t.name: t for t in tools}
        arg_models = {name: t.args_model for name, t in by_name.items()}
        schemas = [t.schema() for t in tools]
        self._log(
            "agent run %s: model=%s tools=%s max_iterations=%d",
            f"continued at turn {pad.iteration + 1}" if params.resume else "started",
            params.model or "(worker default)",
            ",".join(by_name) or "none",
            params.max_iterations,
            outcome="continued" if params.resume else "started",
        )
        self._memo(params, by_name)
        for iteration in range(pad.iteration + 1, params.max_iterations + 1):
            await self._continue_as_new_if_due(params)
            pad.iteration = iteration
            self._set_phase("thinking")
            reply = await self._ask_model(params, schemas, iteration)
            over_budget = budget_exceeded(
                pad.usage,
                pad.cost_usd,
                params.max_total_tokens,
                params.cost_budget.max_usd if params.cost_budget else None,
            )

            if not reply.tool_calls:
                decision = read_final_answer(reply, already_nudged=pad.nudged_empty)
                if isinstance(decision, AskAgain):
                    pad.nudged_empty = True
                    pad.messages = [*pad.messages, decision.nudge]
                    if over_budget:
                        return self._stop_for_budget(params, over_budget)
                    continue
                stop: StopReason = (
                    "completed" if isinstance(decision, FinalAnswer) else "empty_answer"
                )
                return self._finish(decision.text, stop)
            pad.nudged_empty = False
            if over_budget:
                return self._stop_for_budget(params, over_budget)
            if not may_run_tools(iteration, params.max_iterations):
                break

            self._set_phase("running_tools")
            screened = screen_round(
                pad.repetition,
                plan_tool_calls(reply.tool_calls, arg_models),
                params.max_repeated_calls,
            )
            if screened.stop_tool:
                return self._finish(repeated_calls_message(screened.stop_tool), "repeated_calls")
            pad.repetition = screened.state
            outcomes = await asyncio.gather(
                *(self._run_call(p, by_name, params, iteration) for p in screened.calls)
            )
            observed = observe_round(
                pad.repetition,
                screened.calls,
                [(step.observation, step.status == "error") for step, _ in outcomes],
                params.max_repeated_calls,
            )
            pad.repetition = observed.state
            round_steps = [
                step.model_copy(update={"observation": text})
                for (step, _), text in zip(outcomes, observed.observations, strict=True)
            ]
            pad.steps = [*pad.steps, *round_steps]
            self._pad = pad = keep_recent_steps(pad)
            self._status = self._status.model_copy(
                update={
                    "steps": len(pad.steps) + pad.steps_omitted,
                    "recent_steps": pad.steps[-RECENT_STEPS_IN_STATUS:],
                }
            )
            pad.messages = append_round(
                pad.messages, reply.as_message(), [(s.call_id, s.observation) for s in round_steps]
            )
            stopping = [step for step, stop_run in outcomes if stop_run]
            if stopping:
                return self._finish(stopping[0].observation, "stopped_by_tool")
            if observed.stop_tool:
                return self._finish(repeated_calls_message(observed.stop_tool), "repeated_calls")

        return await self._at_max_iterations(params, schemas)

    async def _continue_as_new_if_due(self, params: AgentInput) -> None:
        """Between rounds: hand the run to a fresh execution once the history is large, carrying
        the compacted scratchpad (messages still needed, steps, usage, guards' state)."""
        info = workflow.info()
        if not should_continue_as_new(
            events=info.get_current_history_length(),
            size_bytes=info.get_current_history_size(),
            suggested=info.is_continue_as_new_suggested(),
            max_events=params.continue_as_new_after_events,
            max_bytes=params.continue_as_new_after_bytes,
        ):
            return
        await workflow.wait_condition(workflow.all_handlers_finished)
        carried = compact_for_carry(
            self._pad, params.max_context_tokens, params.context_strategy == "summarize"
        )
        workflow.logger.info(
            "continuing as new at turn %d: %d history events, %d bytes; carrying %d messages",
            self._pad.iteration + 1,
            info.get_current_history_length(),
            info.get_current_history_size(),
            len(carried.messages),
        )
        workflow.continue_as_new(params.model_copy(update={"resume": carried}))

    def _memo(self, params: AgentInput, by_name: dict[str, Tool]) -> None:
        """What the Web UI's Memo tab shows about the run: prompt, model, tools, limits."""
        workflow.upsert_memo(
            {
                "prompt": shorten(params.prompt, 300),
                "model": params.model or "(worker default)",
                "tools": list(by_name),
                "max_iterations": params.max_iterations,
                "max_total_tokens": params.max_total_tokens,
                "continued_from_turn": self._pad.iteration if params.resume else None,
            }
        )

    async def _at_max_iterations(
        self, params: AgentInput, schemas: list[ToolSchema]
    ) -> AgentResult:
        """`on_max_iterations`: stop with the partial result, ask once more without tools, or
        fail with the partial result in the error's details."""
        message = max_iterations_message(params.max_iterations)
        if params.on_max_iterations == "fail":
            partial = self._finish(message, "max_iterations")
            raise ApplicationError(
                message,
                partial.model_dump(mode="json"),
                type=MAX_ITERATIONS_REACHED,
                non_retryable=True,
            )
        if params.on_max_iterations == "final_answer":
            self._pad.iteration = params.max_iterations + 1
            self._set_phase("thinking")
            reply = await self._ask_model(
                params,
                schemas,
                params.max_iterations + 1,
                purpose="final_answer",
                extra=[ChatMessage.user(FINAL_ANSWER_PROMPT)],
            )
            if (reply.content or "").strip():
                return self._finish(reply.content or "", "max_iterations")
        return self._finish(message, "max_iterations")

    def _stop_for_budget(self, params: AgentInput, reason: StopReason) -> AgentResult:
        pad = self._pad
        limit = (
            float(params.max_total_tokens or 0)
            if reason == "token_budget"
            else (params.cost_budget.max_usd if params.cost_budget else 0.0)
        )
        return self._finish(budget_message(reason, pad.usage, pad.cost_usd, limit), reason)

    # -- model calls ---------------------------------------------------------------------------

    async def _ask_model(
        self,
        params: AgentInput,
        schemas: list[ToolSchema],
        iteration: int,
        *,
        purpose: Literal["turn", "final_answer"] = "turn",
        extra: list[ChatMessage] | None = None,
    ) -> ModelReply:
        """One model turn: fit the context, call the model (sending only what is new since the
        last call unless `context_transfer` is `full`), count what it cost."""
        pad = self._pad
        fit = await self._fit_context(params)
        request = ModelRequest(
            model=params.model,
            tools=schemas,
            tool_choice="none" if purpose == "final_answer" and schemas else None,
            turn=iteration,
            purpose=purpose,
        )
        if params.context_transfer == "full":
            messages = context_messages(
                pad.messages, fit, pad.summary, prompt_index=pad.prompt_index
            )
            request = request.model_copy(update={"messages": [*messages, *(extra or [])]})
            reply = await self._call_model(params, request)
        else:
            reply = await self._call_model(params, self._with_delta(request, fit, extra))
            if reply.context_cache_miss:
                self._sent_messages = 0
                reply = await self._call_model(params, self._with_delta(request, fit, extra))
            self._sent_messages = len(pad.messages)
        reply = normalize_reply(reply, iteration)
        if purpose == "final_answer":
            reply = reply.model_copy(update={"tool_calls": []})
        return reply

    def _with_delta(
        self, request: ModelRequest, fit: ContextFit, extra: list[ChatMessage] | None
    ) -> ModelRequest:
        pad = self._pad
        info = workflow.info()
        delta = ContextDelta(
            key=f"{info.workflow_id}/{info.run_id}",
            base_length=self._sent_messages,
            new_messages=pad.messages[self._sent_messages :],
            prompt_index=pad.prompt_index,
            kept_from=fit.kept_from,
            dropped=fit.dropped,
            summary=pad.summary,
            extra=extra or [],
        )
        return request.model_copy(update={"context": delta})

    async def _fit_context(self, params: AgentInput) -> ContextFit:
        """Which messages to send: all if they fit, else system + summary/note + prompt + tail.

        With the `summarize` strategy, messages about to be left out are first folded into the
        running summary by a model call.
        """
        pad = self._pad
        summarize = params.context_strategy == "summarize"
        reserve = params.max_context_tokens // 5 if summarize else 0
        fit = fit_context(
            pad.messages,
            params.max_context_tokens,
            prompt_index=pad.prompt_index,
            reserve_tokens=reserve,
        )
        if summarize and fit.kept_from > pad.summarized_upto:
            dropped = [
                m
                for index, m in enumerate(pad.messages)
                if pad.summarized_upto <= index < fit.kept_from and index != pad.prompt_index
            ]
            max_chars = reserve * 3
            request = ModelRequest(
                model=params.model,
                messages=summary_request(pad.summary, dropped, max_chars),
                turn=pad.iteration,
                purpose="summary",
            )
            summary = await self._call_model(params, request)
            pad.summary = clip_to_tokens((summary.content or "").strip(), reserve) or pad.summary
            pad.summarized_upto = fit.kept_from
        if summarize:
            fit = ContextFit(
                kept_from=max(fit.kept_from, pad.summarized_upto),
                estimated_tokens=fit.estimated_tokens,
                dropped=fit.dropped,
            )
        return ContextFit(
            kept_from=fit.kept_from,
            estimated_tokens=fit.estimated_tokens,
            dropped=fit.dropped + pad.compacted,
        )

    async def _call_model(self, params: AgentInput, request: ModelRequest) -> ModelReply:
        """Run the `call_model` activity and add its usage (and cost) to the run's spending."""
        started = workflow.now()
        try:
            reply = await workflow.execute_activity(
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
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                summary=model_call_summary(params.model, request.turn, request.purpose),
            )
        except ActivityError as error:
            if is_cancelled_exception(error):
                raise
            cause = error.cause
            detail = cause.message if isinstance(cause, ApplicationError | TimeoutError) else error
            raise ApplicationError(
                f"model call failed at turn {request.turn}: {detail}",
                type=MODEL_CALL_FAILED,
                non_retryable=True,
            ) from error
        if reply.context_cache_miss:
            return reply
        pad = self._pad
        pad.usage = pad.usage + reply.usage
        pad.model = reply.model
        pad.model_calls = [
            *pad.model_calls,
            ModelCall(
                turn=request.turn,
                purpose=request.purpose,
                model=reply.model,
                usage=reply.usage,
                tool_calls=len(reply.tool_calls),
                finish_reason=reply.finish_reason,
                started_at=started,
                finished_at=workflow.now(),
            ),
        ][-MAX_KEPT_STEPS:]
        self._log(
            "model %s answered turn %d (%s): %d tool calls, %d tokens",
            reply.model,
            request.turn,
            request.purpose,
            len(reply.tool_calls),
            reply.usage.total_tokens,
            model=reply.model,
            purpose=request.purpose,
            latency_ms=self._ms_since(started),
            tokens=reply.usage.total_tokens,
            tool_calls=len(reply.tool_calls),
            finish_reason=reply.finish_reason,
        )
        if params.cost_budget is not None:
            try:
                price = price_for(reply.model, params.cost_budget.prices)
            except NoPrice as error:
                raise ApplicationError(
                    str(error), type=NO_PRICE_FOR_MODEL, non_retryable=True
                ) from None
            pad.cost_usd = (pad.cost_usd or 0.0) + cost_of(reply.usage, price)
        self._status = self._status.model_copy(update={"usage": pad.usage, "model": pad.model})
        return reply

    # -- tool calls ----------------------------------------------------------------------------

    async def _run_call(
        self,
        planned: PlannedCall,
        by_name: dict[str, Tool],
        params: AgentInput,
        iteration: int,
    ) -> tuple[ToolStep, bool]:
        """One call of a round: refused, answered by a person, or run (perhaps after approval).

        Returns the step and whether the tool asked to end the run.
        """
        started = workflow.now()
        call = planned.call

        def step(
            observation: str,
            status: StepStatus,
            args: dict[str, Any] | None,
            human: HumanDecision | None = None,
        ) -> ToolStep:
            return ToolStep(
                iteration=iteration,
                call_id=call.id,
                tool=call.name,
                raw_arguments=call.arguments,
                args=args,
                observation=observation,
                status=status,
                started_at=started,
                finished_at=workflow.now(),
                human=human,
            )

        if isinstance(planned, RefusedCall):
            self._log(
                "tool call %s refused: %s",
                call.id,
                planned.observation,
                tool=call.name,
                call_id=call.id,
                outcome="refused",
            )
            return step(planned.observation, "error", None), False
        item = by_name[call.name]
        args = planned.args
        human: HumanDecision | None = None
        if item.asks_user or approvals.needs_approval(item, args):
            request, human = await self._wait_for_person(item, call, args, params)
            if not approvals.should_run(human):
                status: StepStatus = (
                    "rejected"
                    if human.outcome == "rejected"
                    else "error"
                    if human.outcome == "timed_out" and human.timeout_action != "approve"
                    else "ok"
                )
                observation = approvals.decision_observation(request, human)
                return step(observation, status, args, human), False
            args = human.executed_args or args
        observation, status, stop_run = await self._execute(item, call, args, params, iteration)
        note = approvals.edited_note(human) if human else None
        return step(
            f"{note}\n{observation}" if note else observation, status, args, human
        ), stop_run

    async def _wait_for_person(
        self, item: Tool, call: ToolCall, args: dict[str, Any], params: AgentInput
    ) -> tuple[PendingRequest, HumanDecision]:
        seconds, action = approvals.wait_limits(
            item, params.approval_timeout_seconds, params.approval_timeout_action
        )
        request = approvals.open_request(
            kind="question" if item.asks_user else "approval",
            workflow_id=workflow.info().workflow_id,
            call_id=call.id,
            tool=item.name,
            args=args,
            now=workflow.now(),
            timeout_seconds=seconds,
            on_timeout=action,
        )
        self._log(
            "%s %s waits for a person: %s",
            item.name,
            call.id,
            request.command,
            tool=item.name,
            call_id=call.id,
            outcome="waiting",
        )
        decision = await self._gate.wait(request)
        if decision.outcome == "timed_out" and decision.timeout_action == "fail":
            raise ApplicationError(
                f"{request.kind} for {item.name} ({call.id}) timed out after "
                f"{approvals.waited_seconds(request):g}s and the timeout action is 'fail'",
                type=HUMAN_WAIT_TIMED_OUT,
                non_retryable=True,
            )
        return request, decision

    async def _execute(
        self,
        item: Tool,
        call: ToolCall,
        args: dict[str, Any],
        params: AgentInput,
        iteration: int,
    ) -> tuple[str, StepStatus, bool]:
        """Run the tool's activity: (observation, status, stop_run). A failure becomes an
        `Error: ...` observation unless the tool is set to stop the run."""
        options = item.options
        started = workflow.now()
        invocation = ToolInvocation(
            call_id=call.id,
            tool=item.name,
            args=args,
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
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                summary=tool_call_summary(args),
            )
        except ActivityError as error:
            if is_cancelled_exception(error):
                raise
            observation = failure_observation(tool_failure(error, item))
            if options.on_error == "stop":
                raise ApplicationError(
                    f"tool {item.name} failed and is set to stop the run: {observation}",
                    type=TOOL_FAILED_RUN,
                    non_retryable=True,
                ) from error
            self._log_tool(item, call, "error", started)
            return observation, "error", False
        self._log_tool(item, call, "ok", started, truncated=output.truncated)
        return output.content, "ok", output.stop_run

    def _log_tool(
        self, item: Tool, call: ToolCall, outcome: str, started: datetime, **fields: Any
    ) -> None:
        self._log(
            "tool %s call %s: %s",
            item.name,
            call.id,
            outcome,
            tool=item.name,
            call_id=call.id,
            outcome=outcome,
            latency_ms=self._ms_since(started),
            **fields,
        )

    @staticmethod
    def _ms_since(started: datetime) -> int:
        return int((workflow.now() - started).total_seconds() * 1000)

    # -- what the Web UI shows -----------------------------------------------------------------

    def _log(self, message: str, *args: Any, level: int = logging.INFO, **fields: Any) -> None:
        """Log through the SDK's replay-safe logger with structured `agent` fields (session,
        turn, phase, plus the caller's: tool, outcome, latency_ms, tokens, ...)."""
        session = (
            self._params.session.workflow_id if self._params and self._params.session else None
        )
        agent = {
            "session": session,
            "turn": self._pad.iteration,
            "phase": self._status.phase,
            **fields,
        }
        workflow.logger.log(level, message, *args, extra={"agent": agent})

    def _on_gate_change(self) -> None:
        """Pending requests changed: update the details, and tell the session (if any)."""
        self._refresh_details()
        if self._params is not None and self._params.session is not None:
            pending = list(self._gate.pending.values())
            task = asyncio.create_task(self._signal_session(self._params, "turn_pending", pending))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _set_phase(self, phase: Phase) -> None:
        self._status = self._status.model_copy(
            update={"phase": phase, "iteration": self._pad.iteration}
        )
        self._refresh_details()

    def _refresh_details(self) -> None:
        """Current details for the Web UI and `describe`: turn, phase, tokens, who is awaited."""
        status = self._status
        pending = list(self._gate.pending.values())
        if status.phase in ("running_tools", "waiting_for_human"):
            phase: Phase = "waiting_for_human" if pending else "running_tools"
            self._status = status = status.model_copy(update={"phase": phase})
        lines = [
            f"turn {status.iteration}/{status.max_iterations}: {status.phase.replace('_', ' ')}"
            f" · {status.usage.total_tokens} tokens · {status.steps} tool calls"
        ]
        for request in pending:
            what = (
                f"question: {shorten(request.question or '', 200)}"
                if request.kind == "question"
                else f"approval: {request.tool} {tool_call_summary(request.args)}"
            )
            lines.append(f"waiting for {what}\n  {request.command}")
        workflow.set_current_details("\n".join(lines))

    def _finish(self, answer: str, stop_reason: StopReason) -> AgentResult:
        pad = self._pad
        self._status = self._status.model_copy(
            update={"phase": "done", "stop_reason": stop_reason, "iteration": pad.iteration}
        )
        workflow.set_current_details(
            f"done ({stop_reason}) after {pad.iteration} turns · {pad.usage.total_tokens} tokens"
        )
        self._log(
            "agent run finished: stop_reason=%s iterations=%d tool_calls=%d tokens=%d",
            stop_reason,
            pad.iteration,
            len(pad.steps),
            pad.usage.total_tokens,
            outcome=stop_reason,
            tokens=pad.usage.total_tokens,
            tool_calls=len(pad.steps) + pad.steps_omitted,
        )
        return AgentResult(
            answer=answer,
            stop_reason=stop_reason,
            iterations=pad.iteration,
            steps=compact_steps(pad.steps),
            steps_omitted=pad.steps_omitted,
            model_calls=pad.model_calls[-MAX_KEPT_STEPS:],
            usage=pad.usage,
            cost_usd=pad.cost_usd,
            model=pad.model,
        )
