"""`AgentLoop`: the tool-calling loop, a plain class run by a workflow that hosts it.

model -> tool calls -> observations -> model ... until an answer. The workflow orchestrates and
decides nothing itself: the decisions are the pure functions in `loop/` (read a reply, stop or
go on, what to send, how the scratchpad moves forward), the model is reached through
`ModelGateway` (a `call_model` activity per call) and tools through `ToolRound` (an activity
per call, named after the tool; calls that need a person wait durably in `HumanGate`).

The run's state is `_pad`, an immutable `Scratchpad` that is replaced at each step, plus the
phase; `status` and the Web UI's current details are computed from them when needed. Nothing
else is persisted: the history is the state store.

The loop has no Temporal decorators: `AgentWorkflow` hosts it as a run of its own
(`RunHost`), a session hosts it as a turn inside the session's history (`SessionTurnHost`);
what differs between the two is the `LoopHost`. What people send a loop (approvals, questions,
steering, plan edits) arrives through `workflows.people`, whose handlers every hosting workflow
registers, and lands in the methods under "what people send".

What the loop does is also published as it happens on the host workflow's event stream
(`RunEvents`, `contracts.events`): the run's start and end, each model call's end, steering,
plan updates, limits; the tool round, the gate and the sub-agents publish their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from durable_agents.contracts.agent_input import AgentInput
    from durable_agents.contracts.agent_result import AgentResult, ModelCall, StopReason
    from durable_agents.contracts.agent_status import AgentStatus, Phase
    from durable_agents.contracts.agents import CHILD_PENDING_SIGNAL, ChildPending
    from durable_agents.contracts.approvals import (
        ALL_PENDING,
        DECISION_REFUSED,
        ApproveSignal,
        DecideUpdate,
        HumanDecision,
        PendingRequest,
        RejectSignal,
        ReplySignal,
        WaitKind,
    )
    from durable_agents.contracts.client_tools import ClientToolSpec
    from durable_agents.contracts.errors import INVALID_INPUT, MAX_ITERATIONS_REACHED, STEER_REFUSED
    from durable_agents.contracts.events import (
        LimitReached,
        ModelCallFinished,
        PlanUpdated,
        RunFailed,
        RunFinished,
        RunStarted,
        SteeringReceived,
    )
    from durable_agents.contracts.messages import ChatMessage, SteerMessage
    from durable_agents.contracts.model_io import CachedConversation, ModelReply, ToolSchema
    from durable_agents.contracts.plan import EditPlan
    from durable_agents.contracts.request_kind import RequestKind
    from durable_agents.contracts.scratchpad import Scratchpad
    from durable_agents.loop import approvals
    from durable_agents.loop.context_plan import summary_due, with_summary
    from durable_agents.loop.continuation import compact_for_carry
    from durable_agents.loop.event_views import event_text, headline, limit_of, plan_key, plan_steps
    from durable_agents.loop.input_validation import InvalidAgentInput, validate_agent_input
    from durable_agents.loop.kept_outputs import KeptOutput
    from durable_agents.loop.limits import FINAL_ANSWER_PROMPT, should_continue_as_new
    from durable_agents.loop.model_reply import drop_unknown_calls, read_reply, with_dropped_calls
    from durable_agents.loop.output import (
        OutputSpec,
        output_spec,
        parse_text,
        render_output,
    )
    from durable_agents.loop.pasted_commands import aimed_requests
    from durable_agents.loop.plan import plan_args
    from durable_agents.loop.progress import (
        first_scratchpad,
        next_iteration,
        run_result,
        steered,
        steering_refusal,
        with_model_call,
        with_round,
        with_steering,
    )
    from durable_agents.loop.status import current_details, run_status, visible_phase
    from durable_agents.loop.stop import Limits, Stop, decide_stop
    from durable_agents.loop.summaries import shorten
    from durable_agents.runtime.telemetry_workflow import model_priced, run_started, turn_span
    from durable_agents.workflows.callees.client_tool import record_tool_result
    from durable_agents.workflows.callees.protocol import Callee
    from durable_agents.workflows.definitions import (
        definition_at_end,
        definition_memo,
        run_definition,
        shown_tools,
    )
    from durable_agents.workflows.delegation import ChildRequests
    from durable_agents.workflows.human_gate import HumanGate
    from durable_agents.workflows.loop_host import LoopHost, TurnOutgrewSession
    from durable_agents.workflows.makers import believed
    from durable_agents.workflows.model_gateway import ModelGateway
    from durable_agents.workflows.plan_and_execute import PlanRunner
    from durable_agents.workflows.refusals import (
        BadInput,
        parse_or_ignore,
        parse_or_refuse,
        raised_limits,
        read_payload,
        refuse,
    )
    from durable_agents.workflows.run_events import RunEvents
    from durable_agents.workflows.run_log import RunLog
    from durable_agents.workflows.run_tools import prepare_tools
    from durable_agents.workflows.session_link import (
        TurnCancelled,
        session_steps,
    )
    from durable_agents.workflows.tool_round import ToolRound
    from durable_agents.workflows.worker_catalog import warn_missing_on_replay, worker_catalog

SignalT = TypeVar("SignalT", bound=BaseModel)


def input_refusal(error: Exception) -> str:
    """`invalid AgentWorkflow input: <the problem>`."""
    text = str(error)
    prefix = "invalid AgentWorkflow input: "
    return text if text.startswith(prefix) else prefix + text


class AgentLoop:
    """Runs one agent task to an answer (`run_input`), hosted by `host`."""

    def __init__(self, host: LoopHost, events: RunEvents | None = None) -> None:
        self._host = host
        self._events = events or RunEvents.off()
        self._params: AgentInput | None = None
        self._pad = Scratchpad(messages=[])
        self._phase: Phase = "starting"
        self._stop_reason: StopReason | None = None
        self._gate = HumanGate({}, on_change=self._on_gate_change, events=self._events)
        self._log = RunLog(self._log_context)
        self._children = ChildRequests(self._events)
        self._round: ToolRound | None = None
        self._plan_shown: tuple[object, ...] | None = None

    # -- the run -------------------------------------------------------------------------------

    async def run_input(self, raw_input: Any) -> AgentResult:
        """The run, from its raw input (a `RawValue`, or a session's `AgentInput` for a turn
        it hosts): its result, or it raises as a run fails (a bad start: at once, naming the
        problem)."""
        params = self._start(raw_input)
        try:
            if params.mode == "plan_and_execute":
                result = await self._plan_and_execute(params)
            else:
                result = await self._react(params)
        except (workflow.ContinueAsNewError, TurnOutgrewSession):  # handed over, not ended
            raise
        except (Exception, asyncio.CancelledError) as error:
            # (a worker evicting the run closes it with GeneratorExit: that is not an ending)
            await self._report_ending(params, error)
            raise
        await definition_at_end(self._params or params, result)
        self._events.emit(RunFinished, stop_reason=result.stop_reason, answer=result.answer)
        await self._report(params, result=result)
        if params.session is not None:
            # A session's turn: its session keeps the answer; each tool output is in its
            # activity's result already, and a full copy in the run's result adds two more.
            result = result.model_copy(update={"steps": session_steps(result.steps)})
        return result

    def _start(self, raw_input: Any) -> AgentInput:
        """Read the run's input, set the run up from it and announce it (a continued run, or a
        turn moved to a run of its own, goes on: announced already)."""
        params = self._read_input(raw_input)
        self._host.check_start(params)
        self._params = params
        run_started(params.agent_name, params.agent_version, params.model)  # (no command)
        self._gate.policy, self._gate.starter = params.approval_policy, params.starter
        self._children.starter = params.starter
        self._pad = first_scratchpad(params)
        self._plan_shown = plan_key(self._pad.plan)
        self._events.turn = params.session.turn if params.session is not None else None
        if params.resume is None:
            self._events.emit(
                RunStarted,
                prompt=headline(params.prompt),
                model=params.model,
                parent_workflow_id=params.parent.workflow_id if params.parent else None,
            )
        return params

    async def _report_ending(self, params: AgentInput, error: BaseException) -> None:
        """Publish and report a run that `error` ends: failed, or cancelled."""
        if not is_cancelled_exception(error):
            self._emit_failure(error, cancelled=False)
            await self._report(params, error=error)
            return
        self._emit_failure(error, cancelled=True)
        self._set_phase("cancelled")
        self._log(
            "agent run %s",
            current_details(self.status()),
            outcome="cancelled",
            tools=[s.tool for s in self._pad.steps],
        )
        await self._report(params, error=TurnCancelled("the turn was cancelled"))

    def _read_input(self, raw_input: Any) -> AgentInput:
        """The run's input, or a refusal naming the problem."""
        catalog = worker_catalog()
        self._gate.add_schemas({t.name: t.args_model for t in catalog.tools.all()})
        known = (catalog.tools.names(), catalog.output_types.names(), catalog.agents.by_name())
        try:
            return validate_agent_input(
                read_payload(raw_input, max_bytes=None), *known, payload_store=raised_limits
            )
        except (BadInput, InvalidAgentInput) as error:
            if isinstance(error, InvalidAgentInput):  # it decoded: say what is missing
                warn_missing_on_replay(read_payload(raw_input, max_bytes=None))
            refuse(input_refusal(error), INVALID_INPUT)

    async def _report(
        self,
        params: AgentInput,
        *,
        result: AgentResult | None = None,
        error: BaseException | None = None,
    ) -> None:
        await self._host.report(params, result=result, error=error, usage=self._pad.usage)

    async def _react(self, params: AgentInput) -> AgentResult:
        """The loop: ask the model → a final answer or a nudge → run one round of tools →
        decide whether to stop → repeat."""
        output = output_spec(params, worker_catalog().output_types.as_dict())
        run_tools = await prepare_tools(params, output, self._gate, self._script_round)
        self._gate.add_schemas(run_tools.outside_schemas)
        self._params = params = await run_definition(params)
        schemas = shown_tools(run_tools.schemas, params)
        kept: dict[str, KeptOutput] = {}  # tool outputs their workers keep (`loop.kept_outputs`)
        model = ModelGateway(
            params, self._log, self._conversation(params), output, events=self._events, kept=kept
        )
        tool_round = ToolRound(
            params,
            run_tools.callees,
            self._gate,
            self._log,
            self._children,
            run_tools.unavailable,
            events=self._events,
            on_change=self._publish,
            kept=kept,
        )
        self._round = tool_round
        limits = Limits.of(params)
        self._announce(params, run_tools.names)
        while True:
            await self._continue_as_new_if_due(params)
            self._pad = next_iteration(self._pad)
            with turn_span(self._pad.iteration):  # (no command: replays alike either way)
                self._set_phase("thinking")
                await self._summarize_old_context(params, model)
                self._pad = with_steering(self._pad)
                reply = await self._ask(model, schemas)
                reply = self._drop_unknown_calls(params, reply, schemas)
                reading = read_reply(self._pad, reply, output)
                self._pad = reading.pad
                stop = decide_stop(self._pad, limits, reading.outcome)
                if stop is None and reply.tool_calls:
                    self._set_phase("running_tools")
                    done = await tool_round.run(self._pad, reply, reading.refused)
                    self._pad = with_round(self._pad, reply, done)
                    stop = decide_stop(self._pad, limits, done.outcome)
                if stop is not None:
                    return await self._conclude(params, stop, model, schemas, output)

    def _script_round(self, callees: Sequence[Callee]) -> ToolRound:
        """A round of tools over `callees`, for the calls of a code-mode script."""
        assert self._params is not None
        return ToolRound(self._params, callees, self._gate, self._log, self._children)

    async def _plan_and_execute(self, params: AgentInput) -> AgentResult:
        """Plan, (approve,) run each step as a child run, replan on failure, synthesise (see
        `workflows.plan_and_execute`)."""
        run_tools = await prepare_tools(params, None)
        self._gate.add_schemas(run_tools.outside_schemas)
        self._params = params = await run_definition(params)
        self._announce(params, run_tools.names)
        model = ModelGateway(params, self._log, self._conversation(params), events=self._events)
        runner = PlanRunner(params, self, model, self._gate, self._log, run_tools, self._children)
        return self._finish(await runner.run())

    def _conversation(self, params: AgentInput) -> CachedConversation:
        """The worker's context-cache entry the loop's model calls build on (the host's: a
        run's own, carried across continue-as-new; a session's, shared by its turns)."""
        return self._host.conversation(params)

    @property
    def pad(self) -> Scratchpad:
        """The run's state (for the plan runner)."""
        return self._pad

    @pad.setter
    def pad(self, pad: Scratchpad) -> None:
        """(The plan runner's way to move the run on: its model calls and plan changes are
        published as the loop's own.)"""
        last = self._pad.model_calls[-1] if self._pad.model_calls else None
        self._pad = pad
        if pad.model_calls and pad.model_calls[-1] is not last:
            self._emit_model_call(pad.model_calls[-1], None)
        self._emit_plan()

    def set_phase(self, phase: Phase) -> None:
        self._emit_plan()
        self._set_phase(phase)

    async def _summarize_old_context(self, params: AgentInput, model: ModelGateway) -> None:
        """With `context_strategy: summarize`, fold the messages about to leave the context
        window into the running summary (a model call) before the next call."""
        if params.context_strategy != "summarize":
            return
        due = summary_due(self._pad, params.max_context_tokens)
        if due is not None:
            answer = await model.summarize(self._pad, due)
            self._model_called(with_model_call(self._pad, answer), answer.reply)
            self._pad = with_summary(self._pad, due, answer.reply.content)

    async def _ask(
        self,
        model: ModelGateway,
        schemas: list[ToolSchema],
        purpose: Literal["turn", "final_answer"] = "turn",
        extra: list[ChatMessage] | None = None,
    ) -> ModelReply:
        answer = await model.ask(self._pad, schemas, purpose=purpose, extra=extra)
        model_priced(answer.reply.model, answer.cost_usd)
        self._model_called(with_model_call(self._pad, answer), answer.reply)
        return answer.reply

    def _model_called(self, pad: Scratchpad, reply: ModelReply) -> None:
        """The scratchpad after a model call (its record last in `model_calls`): published, with
        the whole text when the reply came too quickly for any delta (`deltas_sent`), or the
        end of it that no delta carried (`text_unsent`)."""
        self._pad = pad
        self._emit_model_call(
            pad.model_calls[-1],
            reply.content,
            whole=not reply.deltas_sent,
            rest=reply.text_rest if reply.deltas_sent else None,
        )

    def _emit_model_call(
        self, call: ModelCall, text: str | None, *, whole: bool = False, rest: str | None = None
    ) -> None:
        self._events.emit(
            ModelCallFinished,
            model_call=call.turn,
            model=call.model,
            purpose=call.purpose,
            usage=call.usage,
            tool_calls=call.tool_calls,
            text=(text if whole else headline(text)) if text else None,
            rest=rest,
        )

    def _emit_plan(self) -> None:
        """Publish the plan when what it shows changed (a step's status, a revision)."""
        plan = self._pad.plan
        key = plan_key(plan)
        if plan is None or key == self._plan_shown:
            return
        self._plan_shown = key
        self._events.emit(PlanUpdated, revision=len(plan.revisions), steps=plan_steps(plan))

    def _emit_failure(self, error: BaseException, *, cancelled: bool) -> None:
        self._events.emit(
            RunFailed,
            error=event_text(str(error) or type(error).__name__),
            error_type=error.type if isinstance(error, ApplicationError) else type(error).__name__,
            cancelled=cancelled,
        )

    def _drop_unknown_calls(
        self, params: AgentInput, reply: ModelReply, schemas: list[ToolSchema]
    ) -> ModelReply:
        """A reply whose every call names a tool the run does not have, with text: the text is
        the answer and the calls are recorded as dropped (`loop.model_reply.drop_unknown_calls`,
        `unknown_tools`)."""
        dropped = drop_unknown_calls(reply, [s.name for s in schemas], params.unknown_tools)
        if dropped is None:
            return reply
        self._pad = with_dropped_calls(self._pad, dropped.calls)
        self._log(
            "model reply at turn %d named only tools this run does not have (%s): its text is "
            "the answer",
            self._pad.iteration,
            ", ".join(call.name for call in dropped.calls),
            outcome="unknown_tools_dropped",
        )
        return dropped.reply

    async def _conclude(
        self,
        params: AgentInput,
        stop: Stop,
        model: ModelGateway,
        schemas: list[ToolSchema],
        output: OutputSpec | None,
    ) -> AgentResult:
        """End the run. At max iterations, `on_max_iterations` says how: stop with the partial
        result, ask once more without tools for the best answer, or fail with the partial result
        in the error's details."""
        limit = limit_of(stop.reason)
        if limit is not None:
            self._events.emit(LimitReached, limit=limit, detail=event_text(stop.answer))
        if stop.reason == "max_iterations" and params.on_max_iterations == "fail":
            partial = self._finish(stop)
            raise ApplicationError(
                stop.answer,
                partial.model_dump(mode="json"),
                type=MAX_ITERATIONS_REACHED,
                non_retryable=True,
            )
        if stop.reason == "max_iterations" and params.on_max_iterations == "final_answer":
            self._pad = next_iteration(self._pad)
            self._set_phase("thinking")
            await self._summarize_old_context(params, model)
            prompt = ChatMessage.user(FINAL_ANSWER_PROMPT)
            reply = await self._ask(model, schemas, "final_answer", [prompt])
            text = reply.content or ""
            if text.strip():
                value, errors = parse_text(output, text) if output else (None, ["untyped"])
                stop = (
                    Stop(StopReason.MAX_ITERATIONS, render_output(value), value)
                    if not errors
                    else Stop(StopReason.MAX_ITERATIONS, text)
                )
        return self._finish(stop)

    def _finish(self, stop: Stop) -> AgentResult:
        self._stop_reason = stop.reason
        self._set_phase("done")
        pad = self._pad
        self._log(
            "agent run finished: stop_reason=%s iterations=%d tool_calls=%d tokens=%d",
            stop.reason,
            pad.iteration,
            len(pad.steps),
            pad.usage.total_tokens,
            outcome=stop.reason,
            tokens=pad.usage.total_tokens,
            tool_calls=len(pad.steps) + pad.steps_omitted,
        )
        return run_result(pad, stop)

    async def _continue_as_new_if_due(self, params: AgentInput) -> None:
        """Between rounds: hand the run to a fresh execution once the history is large, carrying
        the compacted scratchpad (messages still needed, steps, usage, guards' state): a run
        continues-as-new; a turn inside a session hands the rest of itself to a child run
        (`TurnOutgrewSession`), since the session waits on its `send` update and cannot
        continue-as-new under it (`LoopHost.hand_over`)."""
        info = workflow.info()
        if not should_continue_as_new(
            events=info.get_current_history_length(),
            size_bytes=info.get_current_history_size(),
            suggested=info.is_continue_as_new_suggested(),
            max_events=params.continue_as_new_after_events,
            max_bytes=params.continue_as_new_after_bytes,
        ):
            return
        await self._host.ready_to_hand_over()
        carried = compact_for_carry(
            self._pad, params.max_context_tokens, params.context_strategy == "summarize"
        )
        workflow.logger.info(
            "%s at turn %d: %d history events, %d bytes; carrying %d messages",
            self._host.hand_over_words,
            self._pad.iteration + 1,
            info.get_current_history_length(),
            info.get_current_history_size(),
            len(carried.messages),
        )
        self._host.hand_over(params, carried)

    # -- what people see -----------------------------------------------------------------------

    def _announce(self, params: AgentInput, names: list[str]) -> None:
        """Log the start, and set the memo the Web UI shows: prompt, model, tools, limits."""
        continued = params.resume is not None
        self._log(
            "agent run %s: model=%s tools=%s max_iterations=%d",
            f"continued at turn {self._pad.iteration + 1}" if continued else "started",
            params.model or "(worker default)",
            ",".join(names) or "none",
            params.max_iterations,
            outcome="continued" if continued else "started",
        )
        self._host.announce(
            {
                "prompt": shorten(params.prompt, 300),
                "model": params.model or "(worker default)",
                "tools": names,
                "max_iterations": params.max_iterations,
                "max_total_tokens": params.max_total_tokens,
                "continued_from_turn": self._pad.iteration if continued else None,
                **definition_memo(params.definition),
            }
        )

    def _set_phase(self, phase: Phase) -> None:
        self._phase = phase
        self._publish()

    def _publish(self) -> None:
        """Show the loop's state in the Web UI's current details (the host's)."""
        self._host.show(self.status)

    def _on_gate_change(self) -> None:
        """Pending requests changed: show them, and tell the host (a run tells its session or
        its parent run)."""
        self._publish()
        self._host.pending_changed(self._params, self.pending())

    def _log_context(self) -> dict[str, Any]:
        session = self._params.session if self._params else None
        return {
            "session": session.workflow_id if session else None,
            "turn": self._pad.iteration,
            "phase": visible_phase(self._phase, bool(self._gate.pending)),
        }

    # -- what people see and send (`workflows.people.People`) -----------------------------------

    def status(self) -> AgentStatus:
        """Where the run is: phase, iteration, usage, pending requests (their commands naming
        the worker's server: `loop.pasted_commands`), recent steps."""
        return run_status(
            self._pad,
            phase=self._phase,
            max_iterations=self._params.max_iterations if self._params else 0,
            stop_reason=self._stop_reason,
            pending=aimed_requests(self.pending(), worker_catalog().command_server),
            running=self._round.running(self._events) if self._round is not None else (),
            definition=self._params.definition if self._params else None,
        )

    def pending(self) -> list[PendingRequest]:
        """Calls waiting for a person (this run's and its sub-agents'), each with the CLI command
        that answers it."""
        return [*self._gate.pending.values(), *self._children.visible()]

    # -- decisions from people -----------------------------------------------------------------

    async def approve(self, raw: Any) -> None:
        """`{"call_id": "..."|"*", "args"?: {...}, "args_digest"?, "by"?, "comment"?}`"""
        await self._apply("approve", ApproveSignal, raw, self._gate.approve, RequestKind.APPROVAL)

    async def reject(self, raw: Any) -> None:
        """`{"call_id": "..."|"*", "reason"?: "...", "by"?: "..."}`"""
        await self._apply("reject", RejectSignal, raw, self._gate.reject, RequestKind.APPROVAL)

    async def reply(self, raw: Any) -> None:
        """`{"call_id": "..."|"*", "text": "...", "by"?: "..."}` answers an `ask_user` question."""
        await self._apply("reply", ReplySignal, raw, self._gate.reply, RequestKind.QUESTION)

    async def decide(self, raw: Any) -> HumanDecision:
        """`{"call_id", "decision": "approve"|"reject", "args"?, "reason"?, "by"?, "comment"?}`;
        returns the recorded decision."""
        update = parse_or_refuse(DecideUpdate, raw, "decide input", DECISION_REFUSED)
        update = await believed(update, "decide")  # (checked again: the maker may not verify)
        try:
            if self._children.route(update.call_id):
                return self._children.forward_decide(update)
            return self._gate.decide(update)
        except approvals.DecisionRefused as error:
            refuse(str(error), DECISION_REFUSED)

    def validate_decide(self, raw: Any) -> None:
        """Refuse before anything enters history: unknown/decided ids, bad edited args, ..."""
        update = parse_or_refuse(DecideUpdate, raw, "decide input", DECISION_REFUSED)
        try:
            if self._children.route(update.call_id):
                self._children.check_decide(update)
            else:
                self._gate.check(update)
        except approvals.DecisionRefused as error:
            refuse(str(error), DECISION_REFUSED)

    async def tool_result(self, raw: Any) -> HumanDecision:
        """`{"call_id", "result"}` or `{"call_id", "error"}`: a client tool's answer."""
        decision = record_tool_result(self._gate, self._client_tools(), raw, check_only=False)
        assert decision is not None
        return decision

    def validate_tool_result(self, raw: Any) -> None:
        """Refuse before anything enters history: unknown or answered call ids, a result that
        breaks the tool's result_schema, ..."""
        record_tool_result(self._gate, self._client_tools(), raw, check_only=True)

    def _client_tools(self) -> dict[str, ClientToolSpec]:
        specs = self._params.client_tools if self._params is not None else None
        return {s.name: s for s in specs or []}

    async def edit_plan(self, raw: Any) -> HumanDecision:
        """`{"steps": [{"goal": "...", "tools"?: [...]}], "by"?}`: replace the plan waiting for
        approval and approve it; refused (nothing enters history) if malformed or if no plan
        waits."""
        edit, request = self._plan_edit(raw)
        return self._gate.decide(
            DecideUpdate(
                call_id=request.call_id,
                decision="approve",
                args=plan_args(edit),
                by=edit.by,
            )
        )

    def validate_edit_plan(self, raw: Any) -> None:
        self._plan_edit(raw)

    def _plan_edit(self, raw: Any) -> tuple[EditPlan, PendingRequest]:
        edit = parse_or_refuse(EditPlan, raw, "edit_plan input", DECISION_REFUSED)
        waiting = [p for p in self._gate.pending.values() if p.kind is RequestKind.PLAN]
        if not waiting:
            refuse("no plan is waiting for approval", DECISION_REFUSED)
        return edit, waiting[0]

    async def child_pending(self, raw: Any) -> None:
        """From a sub-agent: its calls waiting for a person, shown and answered here."""
        # A real child's report may hold large arguments (a long write_file): Temporal's own
        # payload limit bounds it; a report not from a child this run started is dropped.
        report = parse_or_ignore(ChildPending, raw, CHILD_PENDING_SIGNAL, max_bytes=None)
        if report is not None and self._children.update(report):
            self._on_gate_change()

    # -- steering ------------------------------------------------------------------------------

    async def steer_signal(self, raw: Any) -> None:
        """`{"text": "...", "by"?: "..."}`: a message the model sees at its next call."""
        steer = parse_or_ignore(SteerMessage, raw, "steer")
        if steer is None or self._phase in ("done", "cancelled"):
            return
        steer = await believed(steer, "steer")
        refusal = steering_refusal(self._pad, steer)
        if refusal is not None:
            workflow.logger.warning("signal steer ignored: %s", refusal)
            return
        self._pad = steered(self._pad, steer)
        self._events.emit(SteeringReceived, message=event_text(steer.text), by=steer.by)
        self._publish()

    async def steer(self, raw: Any) -> list[SteerMessage]:
        """Like the signal, but refused when it cannot apply; returns what is queued."""
        steer = await believed(self._steer_message(raw), "steer")
        self._pad = steered(self._pad, steer)
        self._events.emit(SteeringReceived, message=event_text(steer.text), by=steer.by)
        self._publish()
        return self._pad.steering

    def validate_steer(self, raw: Any) -> None:
        self._steer_message(raw)

    def _steer_message(self, raw: Any) -> SteerMessage:
        """The message `raw` holds, or a refusal: malformed, the run has ended, the queue is
        full."""
        steer = parse_or_refuse(SteerMessage, raw, "steer input", STEER_REFUSED)
        if self._phase in ("done", "cancelled"):
            refuse(f"the run has ended ({self._phase}); nothing can be steered", STEER_REFUSED)
        refusal = steering_refusal(self._pad, steer)
        if refusal is not None:
            refuse(refusal, STEER_REFUSED)
        return steer

    async def _apply(
        self,
        name: str,
        model: type[SignalT],
        raw: Any,
        apply: Callable[[SignalT], object],
        kind: WaitKind,
    ) -> None:
        """Apply a signal (forwarding it to the sub-agents whose calls it names); one that
        cannot apply is logged and ignored, never failing the run."""
        signal = parse_or_ignore(model, raw, name)
        if signal is None:
            return
        signal = await believed(signal, name)
        call_id = getattr(signal, "call_id", "")
        if self._children.forward(name, signal, call_id, kind):
            return
        try:
            apply(signal)
        except approvals.DecisionRefused as error:
            if call_id != ALL_PENDING or not self._children.waiting_for(kind):
                workflow.logger.warning("signal %s ignored: %s", name, error)
