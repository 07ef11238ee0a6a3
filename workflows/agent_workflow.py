"""`AgentWorkflow`: the tool-calling loop as a deterministic Temporal workflow.

model -> tool calls -> observations -> model ... until an answer. The workflow orchestrates and
decides nothing itself: the decisions are the pure functions in `loop/` (read a reply, stop or
go on, what to send, how the scratchpad moves forward), the model is reached through
`ModelGateway` (a `call_model` activity per call) and tools through `ToolRound` (an activity
per call, named after the tool; calls that need a person wait durably in `HumanGate`).

The run's state is `_pad`, an immutable `Scratchpad` that is replaced at each step, plus the
phase; `status` and the Web UI's current details are computed from them when needed. Nothing
else is persisted: the history is the state store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Literal, TypeVar

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from contracts.agent_input import AgentInput
    from contracts.agent_result import AgentResult, StopReason
    from contracts.agent_status import Phase
    from contracts.agents import ChildPending
    from contracts.errors import INVALID_INPUT, MAX_ITERATIONS_REACHED
    from contracts.messages import ChatMessage
    from contracts.model_io import CachedConversation, ModelReply, ToolSchema
    from contracts.scratchpad import Scratchpad
    from loop.context_plan import summary_due, with_summary
    from loop.continuation import compact_for_carry
    from loop.input_validation import InvalidAgentInput, link_problem, validate_agent_input
    from loop.limits import FINAL_ANSWER_PROMPT, should_continue_as_new
    from loop.model_reply import read_reply
    from loop.output import (
        OutputSpec,
        output_spec,
        parse_text,
        render_output,
    )
    from loop.progress import (
        first_scratchpad,
        next_iteration,
        run_result,
        with_model_call,
        with_round,
        with_steering,
    )
    from loop.status import current_details, visible_phase
    from loop.stop import Limits, Stop, decide_stop
    from loop.summaries import shorten
    from tools.agents import AGENT_PROFILES
    from tools.catalog import OUTPUT_TYPES, REGISTRY
    from workflows.delegation import ChildRequests, signal_parent
    from workflows.human_gate import HumanGate
    from workflows.model_gateway import ModelGateway, run_conversation
    from workflows.plan_and_execute import PlanRunner
    from workflows.refusals import NO_INPUT, BadInput, read_payload, refuse
    from workflows.run_controls import RunControls
    from workflows.run_log import RunLog
    from workflows.run_tools import prepare_tools
    from workflows.session_link import (
        TurnCancelled,
        pending_report,
        session_steps,
        signal_session,
        turn_report,
    )
    from workflows.tool_round import ToolRound
    from workflows.turn_host import TurnHost, TurnOutgrewSession

SignalT = TypeVar("SignalT", bound=BaseModel)


@workflow.defn(name="AgentWorkflow")
class AgentWorkflow(RunControls):
    """Runs one agent task to an answer. Input: `AgentInput` as JSON; result: `AgentResult`.

    What people send and ask a running agent (approvals, questions, steering, plan edits, the
    `status` and `pending_approvals` queries) is in `RunControls`; this class runs the loop.
    """

    def __init__(self) -> None:
        self._params: AgentInput | None = None
        self._pad = Scratchpad(messages=[])
        self._phase: Phase = "starting"
        self._stop_reason: StopReason | None = None
        self._gate = HumanGate(
            {t.name: t.args_model for t in REGISTRY.all()}, on_change=self._on_gate_change
        )
        self._log = RunLog(self._log_context)
        self._children = ChildRequests()
        self._background: set[asyncio.Task[None]] = set()
        self._host: TurnHost | None = None
        self._cache_entry: CachedConversation | None = None

    @classmethod
    def turn_in(cls, host: TurnHost) -> AgentWorkflow:
        """The loop as a session's turn inside the session's own history (see `TurnHost`):
        `await turn.run(input)` returns the result or raises as a run would; the session
        forwards people's signals and updates to the object's handlers."""
        turn = cls()
        turn._host = host
        return turn

    # -- the run -------------------------------------------------------------------------------

    @workflow.run
    async def run(self, raw_input: RawValue = NO_INPUT) -> AgentResult:
        # The input arrives raw on purpose: if the SDK decoded it into AgentInput, bad CLI JSON
        # (or none at all) would fail the workflow *task* and retry forever; here it fails the
        # run at once, naming the problem.
        return await self.run_input(raw_input)

    async def run_input(self, raw_input: Any) -> AgentResult:
        """The run, from its raw input (a `RawValue`, or a session's `AgentInput` for a turn
        it hosts)."""
        try:
            params = validate_agent_input(
                read_payload(raw_input, max_bytes=None),
                REGISTRY.names(),
                OUTPUT_TYPES.names(),
                AGENT_PROFILES.by_name(),
            )
        except BadInput as error:
            refuse(f"invalid AgentWorkflow input: {error}", INVALID_INPUT)
        except InvalidAgentInput as error:
            refuse(str(error), INVALID_INPUT)
        if self._host is None:
            info = workflow.info()
            problem = link_problem(
                params,
                parent_id=info.parent.workflow_id if info.parent else None,
                continued=info.continued_run_id is not None,
            )
            if problem:
                refuse(f"invalid AgentWorkflow input: {problem}", INVALID_INPUT)
        self._params = params
        self._pad = first_scratchpad(params)
        try:
            if params.mode == "plan_and_execute":
                result = await self._plan_and_execute(params)
            else:
                result = await self._react(params)
        except (workflow.ContinueAsNewError, TurnOutgrewSession):
            raise
        except (Exception, asyncio.CancelledError) as error:
            # (a worker evicting the run closes it with GeneratorExit: that is not an ending)
            if not is_cancelled_exception(error):
                await self._report(params, error=error)
                raise
            self._set_phase("cancelled")
            self._log(
                "agent run %s",
                current_details(self.status()),
                outcome="cancelled",
                tools=[s.tool for s in self._pad.steps],
            )
            await self._report(params, error=TurnCancelled("the turn was cancelled"))
            raise
        await self._report(params, result=result)
        if params.session is not None:
            # A session's turn: its session keeps the answer; each tool output is in its
            # activity's result already, and a full copy in the run's result adds two more.
            result = result.model_copy(update={"steps": session_steps(result.steps)})
        return result

    async def _report(
        self,
        params: AgentInput,
        *,
        result: AgentResult | None = None,
        error: BaseException | None = None,
    ) -> None:
        """A session's turn that is its own run tells its session how it ended (a turn inside
        the session returns to it instead)."""
        if params.session is not None and self._host is None:
            report = turn_report(params.session, result=result, error=error, usage=self._pad.usage)
            await signal_session(params.session, "turn_finished", report)

    async def _react(self, params: AgentInput) -> AgentResult:
        """The loop: ask the model → a final answer or a nudge → run one round of tools →
        decide whether to stop → repeat."""
        output = output_spec(params, OUTPUT_TYPES.as_dict())
        run_tools = await prepare_tools(params, output)
        self._gate.add_schemas(run_tools.outside_schemas)
        schemas = run_tools.schemas
        model = ModelGateway(params, self._log, self._conversation(params), output)
        tool_round = ToolRound(
            params,
            run_tools.callees,
            self._gate,
            self._log,
            self._children,
            run_tools.unavailable,
        )
        limits = Limits.of(params)
        self._announce(params, run_tools.names)
        while True:
            await self._continue_as_new_if_due(params)
            self._pad = next_iteration(self._pad)
            self._set_phase("thinking")
            await self._summarize_old_context(params, model)
            self._pad = with_steering(self._pad)
            reply = await self._ask(model, schemas)
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

    async def _plan_and_execute(self, params: AgentInput) -> AgentResult:
        """Plan, (approve,) run each step as a child run, replan on failure, synthesise (see
        `workflows.plan_and_execute`)."""
        run_tools = await prepare_tools(params, None)
        self._gate.add_schemas(run_tools.outside_schemas)
        self._announce(params, run_tools.names)
        model = ModelGateway(params, self._log, self._conversation(params))
        runner = PlanRunner(
            params, self, model, self._gate, self._log, run_tools.schemas, self._children
        )
        return self._finish(await runner.run())

    def _conversation(self, params: AgentInput) -> CachedConversation:
        """The worker's context-cache entry the run's model calls build on: a session's turns
        share the session's; a run has its own, carried across continue-as-new."""
        if self._host is not None:
            return self._host.conversation
        if self._cache_entry is None:
            self._cache_entry = params.resume_context or run_conversation()
        return self._cache_entry

    @property
    def pad(self) -> Scratchpad:
        """The run's state (for the plan runner)."""
        return self._pad

    @pad.setter
    def pad(self, pad: Scratchpad) -> None:
        self._pad = pad

    def set_phase(self, phase: Phase) -> None:
        self._set_phase(phase)

    async def _summarize_old_context(self, params: AgentInput, model: ModelGateway) -> None:
        """With `context_strategy: summarize`, fold the messages about to leave the context
        window into the running summary (a model call) before the next call."""
        if params.context_strategy != "summarize":
            return
        due = summary_due(self._pad, params.max_context_tokens)
        if due is not None:
            answer = await model.summarize(self._pad, due)
            self._pad = with_summary(with_model_call(self._pad, answer), due, answer.reply.content)

    async def _ask(
        self,
        model: ModelGateway,
        schemas: list[ToolSchema],
        purpose: Literal["turn", "final_answer"] = "turn",
        extra: list[ChatMessage] | None = None,
    ) -> ModelReply:
        answer = await model.ask(self._pad, schemas, purpose=purpose, extra=extra)
        self._pad = with_model_call(self._pad, answer)
        return answer.reply

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
        the compacted scratchpad (messages still needed, steps, usage, guards' state). A turn
        inside a session hands the rest of itself to a child run instead (`TurnOutgrewSession`):
        the session waits on its `send` update and cannot continue-as-new under it."""
        info = workflow.info()
        if not should_continue_as_new(
            events=info.get_current_history_length(),
            size_bytes=info.get_current_history_size(),
            suggested=info.is_continue_as_new_suggested(),
            max_events=params.continue_as_new_after_events,
            max_bytes=params.continue_as_new_after_bytes,
        ):
            return
        if self._host is None:
            await workflow.wait_condition(workflow.all_handlers_finished)
        carried = compact_for_carry(
            self._pad, params.max_context_tokens, params.context_strategy == "summarize"
        )
        workflow.logger.info(
            "%s at turn %d: %d history events, %d bytes; carrying %d messages",
            "continuing as new" if self._host is None else "moving the turn to a child run",
            self._pad.iteration + 1,
            info.get_current_history_length(),
            info.get_current_history_size(),
            len(carried.messages),
        )
        if self._host is not None:
            raise TurnOutgrewSession(carried)
        workflow.continue_as_new(
            params.model_copy(update={"resume": carried, "resume_context": self._cache_entry})
        )

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
        if self._host is not None:
            return  # the session's memo stays the session's
        workflow.upsert_memo(
            {
                "prompt": shorten(params.prompt, 300),
                "model": params.model or "(worker default)",
                "tools": names,
                "max_iterations": params.max_iterations,
                "max_total_tokens": params.max_total_tokens,
                "continued_from_turn": self._pad.iteration if continued else None,
            }
        )

    def _set_phase(self, phase: Phase) -> None:
        self._phase = phase
        self._publish()

    def _publish(self) -> None:
        """Show the run's state in the Web UI's current details (a turn: its session's)."""
        if self._host is not None:
            self._host.details_changed()
            return
        workflow.set_current_details(current_details(self.status()))

    def _on_gate_change(self) -> None:
        """Pending requests changed: show them, and tell the session or the parent run."""
        self._publish()
        params = self._params
        if self._host is not None:
            self._host.pending_changed(self._pending())
            return
        if params is None:
            return
        if params.session is not None:
            shown = pending_report(params.session, self._pending())
            self._spawn(signal_session(params.session, "turn_pending", shown))
        if params.parent is not None:
            report = ChildPending(
                call_key=params.parent.call_key,
                workflow_id=workflow.info().workflow_id,
                token=params.parent.token,
                pending=self._pending(),
            )
            self._spawn(signal_parent(params.parent, report))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _log_context(self) -> dict[str, Any]:
        session = self._params.session if self._params else None
        return {
            "session": session.workflow_id if session else None,
            "turn": self._pad.iteration,
            "phase": visible_phase(self._phase, bool(self._gate.pending)),
        }
