"""`ToolRound`: one round of the tool calls a model asked for, as the engine runs it (n8n's
EngineRequest: the agent never runs tools itself).

screen → run → observe. Calls are validated and screened for repeats (pure `loop` functions);
the ones that may run go out at once, in parallel, each as the tool's own activity (a local
activity for a tool that opts in with `ToolOptions.local`), while calls that need a person
wait in `HumanGate` (after the tool's `precheck`, which refuses at once arguments that can
never succeed); then errors are screened for repeats and every call gets its step. The
workflow records the round.

What a call reaches is a `Callee` (`workflows.callees`: the worker's own tools, MCP servers'
tools, agent profiles); the round treats every kind the same way, and a call's state lives in
its own context and result, so concurrent calls share nothing.

Each call is published on the run's event stream as it starts and as it ends
(`tool_call_started`, `tool_call_finished`), not when the round ends; the calls running now are
listed in `status` (`running`) with the progress their tools report.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.exceptions import is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_input import AgentInput
    from durable_agents.contracts.agent_result import StepStatus, ToolStep
    from durable_agents.contracts.agent_status import RunningCall
    from durable_agents.contracts.approvals import HumanDecision, PendingRequest, RepeatOf
    from durable_agents.contracts.events import ToolCallFinished, ToolCallStarted
    from durable_agents.contracts.messages import ToolCall
    from durable_agents.contracts.model_io import ModelReply
    from durable_agents.contracts.request_kind import RequestKind
    from durable_agents.contracts.scratchpad import Scratchpad
    from durable_agents.contracts.usage import TokenUsage
    from durable_agents.loop import approvals
    from durable_agents.loop.event_views import event_text
    from durable_agents.loop.kept_outputs import KeptOutput
    from durable_agents.loop.policy import denied_observation, verdict
    from durable_agents.loop.progress import Round
    from durable_agents.loop.repetition import (
        observe_round,
        remember_successes,
        screen_repeat,
        screen_round,
    )
    from durable_agents.loop.tool_requests import (
        ArgsSchema,
        PlannedCall,
        RefusedCall,
        plan_tool_calls,
    )
    from durable_agents.workflows.callees.protocol import CallContext, Callee
    from durable_agents.workflows.delegation import ChildRequests, Delegated
    from durable_agents.workflows.human_gate import HumanGate
    from durable_agents.workflows.refusals import limits_context
    from durable_agents.workflows.run_events import RunEvents
    from durable_agents.workflows.run_log import RunLog, ms_since


CallOutcome = tuple[ToolStep, bool, "Delegated | None"]
"""What one call of a round comes to: its step, whether its callee asked to end the run, and
the child run it was (a sub-agent's)."""


@dataclass
class StepInProgress:
    """What a call's `ToolStep` is made of, gathered as the call goes through the round."""

    call: ToolCall
    iteration: int
    started: datetime
    because: str | None = None
    """Which rule (or the tool's definition, or its precheck) decided the call's fate, once
    screened (None: refused before that)."""
    delegated: Delegated | None = None
    """The child run the call was, once it ran (a sub-agent's)."""

    def step(
        self,
        observation: str,
        status: StepStatus,
        args: dict[str, Any] | None,
        human: HumanDecision | None = None,
    ) -> ToolStep:
        """The call's step, ending now."""
        return ToolStep(
            policy=self.because,
            child_workflow_id=self.delegated.workflow_id if self.delegated else None,
            iteration=self.iteration,
            call_id=self.call.id,
            tool=self.call.name,
            raw_arguments=self.call.arguments,
            args=args,
            observation=observation,
            status=status,
            started_at=self.started,
            finished_at=workflow.now(),
            human=human,
        )


@dataclass(frozen=True)
class Cleared:
    """A call cleared to run: the arguments it runs with (a person's edit, if any) and the
    person's decision, where one was asked."""

    args: dict[str, Any]
    human: HumanDecision | None = None


class ToolRound:
    """Runs rounds of tool calls for one run."""

    def __init__(
        self,
        params: AgentInput,
        callees: Sequence[Callee],
        gate: HumanGate,
        log: RunLog,
        children: ChildRequests | None = None,
        unavailable: Mapping[str, str] | None = None,
        *,
        events: RunEvents | None = None,
        on_change: Callable[[], None] | None = None,
        kept: dict[str, KeptOutput] | None = None,
    ):
        self._events = events or RunEvents.off()
        self._kept = kept
        """Where the round notes the outputs their workers keep, by call id (the model gateway
        reads them: `loop.kept_outputs`); None: nowhere."""
        self._on_change = on_change or (lambda: None)
        self._running: dict[str, RunningCall] = {}
        """Calls running now (started, not finished), by call id."""
        self._children = children or ChildRequests()
        self._unavailable = dict(unavailable or {})
        self._params = params
        self._callees = {callee.name: callee for callee in callees}
        self._arg_models: dict[str, ArgsSchema] = {c.name: c.args_schema for c in callees}
        self._gate = gate
        self._log = log

    async def run(
        self, pad: Scratchpad, reply: ModelReply, refused: Mapping[str, str] | None = None
    ) -> Round:
        """Screen, run and observe the calls of `reply`; a repeat after a warning stops the
        round before anything runs. Calls in `refused` (by id) do not run: their observation is
        given (an invalid typed answer's validation errors)."""
        max_repeats = self._params.max_repeated_calls
        refusals = {**(refused or {})}
        refusals.update(
            (c.id, self._unavailable[c.name])
            for c in reply.tool_calls
            if c.name in self._unavailable
        )
        planned = [
            RefusedCall(p.call, refusals[p.call.id]) if p.call.id in refusals else p
            for p in plan_tool_calls(reply.tool_calls, self._arg_models, limits_context())
        ]
        screened = screen_round(pad.repetition, planned, max_repeats)
        if screened.stop_tool:
            return Round(repeated_tool=screened.stop_tool)
        outcomes = await asyncio.gather(
            *(self._run_call(planned, pad) for planned in screened.calls)
        )
        observed = observe_round(
            screened.state,
            screened.calls,
            [(step.observation, step.status == "error") for step, _, _ in outcomes],
            max_repeats,
        )
        steps = [
            step.model_copy(update={"observation": text})
            for (step, _, _), text in zip(outcomes, observed.observations, strict=True)
        ]
        stopping = [step.observation for step, stop_run, _ in outcomes if stop_run]
        children = [child for _, _, child in outcomes if child is not None]
        costs = [c.cost_usd for c in children if c.cost_usd is not None]
        return Round(
            steps=steps,
            repetition=remember_successes(observed.state, steps),
            stopped_by_tool=stopping[0] if stopping else None,
            repeated_tool=observed.stop_tool,
            spent=sum((c.usage for c in children), TokenUsage()),
            spent_cost_usd=sum(costs) if costs else None,
        )

    async def _run_call(self, planned: PlannedCall, pad: Scratchpad) -> CallOutcome:
        """One call: refused, answered by a person, or run (perhaps after approval). Returns
        its step, whether the callee asked to end the run, and the child run it was."""
        made = StepInProgress(planned.call, pad.iteration, workflow.now())
        if isinstance(planned, RefusedCall):
            self._log_refusal(planned.call, planned.observation, "refused")
            return self._ended(made, planned.observation, "error", None), False, None
        callee = self._callees[planned.call.name]
        cleared = await self._clear(made, callee, planned.args, pad)
        if isinstance(cleared, ToolStep):
            return cleared, False, None
        return await self._invoke(made, callee, pad, cleared)

    def _ended(
        self,
        made: StepInProgress,
        observation: str,
        status: StepStatus,
        args: dict[str, Any] | None,
        human: HumanDecision | None = None,
    ) -> ToolStep:
        """The call's step, once it ended (published as finished first)."""
        self._finished(made.call, status, observation)
        return made.step(observation, status, args, human)

    async def _clear(
        self, made: StepInProgress, callee: Callee, args: dict[str, Any], pad: Scratchpad
    ) -> ToolStep | Cleared:
        """Whether the call may run: its step when the run's policy denies it or it repeats a
        success, else what `_ask_person` says where a person must be asked, else its
        arguments as the model gave them."""
        call = made.call
        policy = verdict(self._params.approval_policy, callee.definition, call.name, args)
        made.because = policy.because
        if policy.action == "deny":
            self._log_refusal(call, policy.because, "denied")
            return self._ended(made, denied_observation(policy.because), "denied", args)
        repeat = screen_repeat(pad.repetition, call.name, args, policy.repeat)
        if repeat.refusal is not None:
            self._log_refusal(call, "an identical call already succeeded", "refused as a repeat")
            return self._ended(made, repeat.refusal, "denied", args)
        if callee.asks_user or policy.action == "ask":
            return await self._ask_person(made, callee, args, repeat.repeat_of)
        return Cleared(args)

    async def _ask_person(
        self,
        made: StepInProgress,
        callee: Callee,
        args: dict[str, Any],
        repeat_of: RepeatOf | None,
    ) -> ToolStep | Cleared:
        """A call that needs a person: its step when its tool's precheck refuses it (nobody is
        asked) or the person's decision does not run it; else the arguments to run it with
        (perhaps edited) and the decision."""
        call = made.call
        refusal = self._precheck(callee, call, args)
        if refusal is not None:
            made.because = approvals.PRECHECK
            observation = approvals.precheck_observation(call.name, refusal)
            return self._ended(made, observation, "error", args)
        request, human = await self._wait_for_person(callee, call, args, repeat_of)
        if not approvals.should_run(human):
            observation = approvals.decision_observation(request, human)
            return self._ended(made, observation, approvals.declined_status(human), args, human)
        return Cleared(human.executed_args or args, human)

    async def _invoke(
        self, made: StepInProgress, callee: Callee, pad: Scratchpad, cleared: Cleared
    ) -> CallOutcome:
        """Run a cleared call through its callee; a failure that escapes it (the run fails or is
        cancelled) is published as the call's end before it goes on."""
        call, args, human = made.call, cleared.args, cleared.human
        context = CallContext(self._params, pad, call, args, made.iteration, self._children)
        invoked = workflow.now()  # the call's latency, not the wait for a person before it
        self._started(call, args, invoked)
        try:
            result = await callee.invoke(context)
            if result.kept is not None and self._kept is not None:
                self._kept[call.id] = result.kept
        except BaseException as error:  # (it fails the run, or the run is being cancelled)
            ended = "cancelled" if is_cancelled_exception(error) else "error"
            self._finished(call, ended, str(error))
            raise
        made.delegated = result.delegated
        self._log_tool(callee, call, result.status, invoked, truncated=result.truncated)
        note = approvals.edited_note(human) if human else None
        text = f"{note}\n{result.observation}" if note else result.observation
        step = self._ended(made, text, result.status, args, human)
        return step, result.stop_run, result.delegated

    # -- what the stream and `status` show of calls ----------------------------------------

    def running(self, events: RunEvents) -> list[RunningCall]:
        """The calls running now, each with the latest progress its tool reported."""
        progress = events.progress_of(set(self._running))
        return [
            call.model_copy(
                update={
                    "progress": progress[call.call_id][0],
                    "fraction": progress[call.call_id][1],
                }
            )
            if call.call_id in progress
            else call
            for call in self._running.values()
        ]

    def _started(self, call: ToolCall, args: dict[str, Any], at: datetime) -> None:
        self._running[call.id] = RunningCall(
            call_id=call.id, tool=call.name, args=args, started_at=at
        )
        self._events.emit(ToolCallStarted, call_id=call.id, tool=call.name, arguments=args)
        self._on_change()

    def _finished(self, call: ToolCall, status: str, observation: str) -> None:
        """A call ended (or never ran: refused, denied, rejected): published once."""
        was_running = self._running.pop(call.id, None) is not None
        self._events.emit(
            ToolCallFinished,
            call_id=call.id,
            tool=call.name,
            status=status,
            observation=event_text(observation),
        )
        if was_running:
            self._on_change()

    def _precheck(self, item: Callee, call: ToolCall, args: dict[str, Any]) -> str | None:
        """Why a call about to wait for a person can never succeed, per its tool's `precheck`
        (`ToolOptions.precheck`), or None: then the person is asked.

        A precheck that raises (or returns something odd) is a bug in the tool: it is logged and
        the person is asked as if there were no precheck, so the workflow task never fails on
        it."""
        tool = item.definition
        if tool is None or tool.options.precheck is None:
            return None
        try:
            reason = approvals.precheck_refusal(tool, args)
        except Exception as error:
            self._log(
                "precheck of %s call %s raised %s: %s (a bug in the tool); asking a person anyway",
                item.name,
                call.id,
                type(error).__name__,
                error,
                level=logging.WARNING,
                tool=item.name,
                call_id=call.id,
                outcome="precheck_failed",
            )
            return None
        if reason is None:
            return None
        self._log_refusal(call, reason, "refused by precheck")
        return reason

    async def _wait_for_person(
        self, item: Callee, call: ToolCall, args: dict[str, Any], repeat_of: RepeatOf | None
    ) -> tuple[PendingRequest, HumanDecision]:
        seconds, action = approvals.wait_limits(
            item.options,
            self._params.approval_timeout_seconds,
            self._params.approval_timeout_action,
        )
        request = approvals.open_request(
            kind=RequestKind.QUESTION if item.asks_user else RequestKind.APPROVAL,
            workflow_id=workflow.info().workflow_id,
            call_id=call.id,
            tool=item.name,
            args=args,
            now=workflow.now(),
            timeout_seconds=seconds,
            on_timeout=action,
            repeat_of=None if item.asks_user else repeat_of,
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
        return request, await self._gate.wait_or_fail(request)

    def _log_refusal(self, call: ToolCall, why: str, outcome: str) -> None:
        self._log(
            "tool call %s %s: %s", call.id, outcome, why, tool=call.name, call_id=call.id,
            outcome=outcome,
        )  # fmt: skip

    def _log_tool(
        self, item: Callee, call: ToolCall, outcome: str, started: datetime, **fields: Any
    ) -> None:
        self._log(
            "tool %s call %s: %s",
            item.name,
            call.id,
            outcome,
            tool=item.name,
            call_id=call.id,
            outcome=outcome,
            latency_ms=ms_since(started),
            **fields,
        )
