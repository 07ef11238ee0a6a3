"""`ToolRound`: one round of the tool calls a model asked for, as the engine runs it (n8n's
EngineRequest: the agent never runs tools itself).

screen → run → observe. Calls are validated and screened for repeats (pure `loop` functions);
the ones that may run go out at once, in parallel, each as the tool's own activity (a local
activity for a tool that opts in with `ToolOptions.local`), while calls that need a person
wait in `HumanGate` (after the tool's `precheck`, which refuses at once arguments that can
never succeed); then errors are screened for repeats and every call gets its step. The
workflow records the round.

Seams: `_execute` is where a tool whose activity is a child workflow (a sub-agent) or a call to
an outside (MCP) server would be dispatched; `tools` is the run's tool set, to which tools
listed from outside servers would be added.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

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
    from contracts.agent_input import AgentInput
    from contracts.agent_result import StepStatus, ToolStep
    from contracts.agents import AgentProfile, DelegateArgs
    from contracts.approvals import HumanDecision, PendingRequest
    from contracts.errors import HUMAN_WAIT_TIMED_OUT, TOOL_ERROR, TOOL_FAILED_RUN
    from contracts.mcp import McpCallRequest, McpToolSpec
    from contracts.messages import ToolCall
    from contracts.model_io import ModelReply, ToolSchema
    from contracts.scratchpad import Scratchpad
    from contracts.tool_io import ToolInvocation, ToolOutput
    from contracts.usage import TokenUsage
    from loop import approvals
    from loop.observations import ToolFailure, failure_observation
    from loop.policy import PolicyVerdict, denied_observation, verdict
    from loop.progress import Round
    from loop.repetition import observe_round, screen_round
    from loop.summaries import shorten, tool_call_summary
    from loop.tool_requests import ArgsSchema, PlannedCall, RefusedCall, plan_tool_calls
    from tools.definition import Tool, ToolOptions
    from workflows.delegation import ChildRequests, Delegated, run_child
    from workflows.human_gate import HumanGate
    from workflows.run_log import RunLog, ms_since
    from workflows.session_link import run_scope


LOCAL_TOOLS_PATCH = "local-tools"
"""Patch id of running `ToolOptions.local` tools as local activities (see `_run_activity`)."""

PRECHECK_PATCH = "tool-precheck"
"""Patch id of refusing a call its tool's precheck rejects instead of asking a person (see
`_precheck`)."""

MCP_TOOL_OPTIONS = ToolOptions(start_to_close_timeout=timedelta(seconds=60))
"""How an MCP server's tool is run: a minute per attempt, transient failures retried."""


@dataclass(frozen=True)
class Callee:
    """What a tool call reaches: its name, how Temporal runs it, and what it is: a tool
    compiled into the worker, or a tool of an outside MCP server."""

    name: str
    options: ToolOptions
    local: Tool | None = None
    mcp: McpToolSpec | None = None
    agent: AgentProfile | None = None

    @property
    def asks_user(self) -> bool:
        return self.local is not None and self.local.asks_user

    @classmethod
    def of_tool(cls, item: Tool) -> Callee:
        return cls(item.name, item.options, local=item)

    @classmethod
    def of_mcp(cls, spec: McpToolSpec) -> Callee:
        return cls(spec.qualified_name, MCP_TOOL_OPTIONS, mcp=spec)

    @classmethod
    def of_agent(cls, profile: AgentProfile) -> Callee:
        return cls(profile.name, ToolOptions(), agent=profile)


def mcp_tool_schema(spec: McpToolSpec) -> ToolSchema:
    """What the model is told about an MCP server's tool: its qualified name, the server's
    description and the server's own JSON schema of the arguments."""
    return ToolSchema(
        name=spec.qualified_name,
        description=spec.description or f"{spec.name} (from MCP server {spec.server})",
        parameters=spec.input_schema or {"type": "object", "properties": {}},
    )


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


def local_activity_error(
    activity_type: str, failure: ApplicationError | TimeoutError, options: ToolOptions
) -> ActivityError:
    """A failed local activity's error, wrapped as a regular activity's would be.

    The SDK raises a local activity's failure bare (an `ApplicationError`, not an
    `ActivityError` with it as the cause: sdk-core issue 323), without the retry state that
    says whether the retries were used up. A failure the policy may retry can only have ended
    the call once its attempts were used up; any other failure ended it at once."""
    if isinstance(failure, TimeoutError):
        retry_state = RetryState.TIMEOUT
    elif failure.non_retryable or failure.type in (
        options.effective_retry_policy.non_retryable_error_types or []
    ):
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


class ToolRound:
    """Runs rounds of tool calls for one run."""

    def __init__(
        self,
        params: AgentInput,
        tools: Sequence[Tool],
        gate: HumanGate,
        log: RunLog,
        mcp_tools: Sequence[McpToolSpec] = (),
        agents: Sequence[AgentProfile] = (),
        children: ChildRequests | None = None,
        unavailable: Mapping[str, str] | None = None,
    ):
        self._children = children or ChildRequests()
        self._unavailable = dict(unavailable or {})
        self._params = params
        callees = [
            *(Callee.of_tool(t) for t in tools),
            *(Callee.of_mcp(s) for s in mcp_tools),
            *(Callee.of_agent(p) for p in agents),
        ]
        self._callees = {callee.name: callee for callee in callees}
        self._arg_models: dict[str, ArgsSchema] = {
            **{t.name: t.args_model for t in tools},
            **{s.qualified_name: s.input_schema for s in mcp_tools},
            **{p.name: DelegateArgs for p in agents},
        }
        self._pad = Scratchpad(messages=[])
        """The scratchpad the current round started from (sub-agents get what is left of its
        budgets)."""
        self._delegated: dict[str, Delegated] = {}
        self._gate = gate
        self._log = log

    async def run(
        self, pad: Scratchpad, reply: ModelReply, refused: Mapping[str, str] | None = None
    ) -> Round:
        """Screen, run and observe the calls of `reply`; a repeat after a warning stops the
        round before anything runs. Calls in `refused` (by id) do not run: their observation is
        given (an invalid typed answer's validation errors)."""
        max_repeats = self._params.max_repeated_calls
        self._pad, self._delegated = pad, {}
        refusals = {**(refused or {})}
        refusals.update(
            (c.id, self._unavailable[c.name])
            for c in reply.tool_calls
            if c.name in self._unavailable
        )
        planned = [
            RefusedCall(p.call, refusals[p.call.id]) if p.call.id in refusals else p
            for p in plan_tool_calls(reply.tool_calls, self._arg_models)
        ]
        screened = screen_round(pad.repetition, planned, max_repeats)
        if screened.stop_tool:
            return Round(repeated_tool=screened.stop_tool)
        outcomes = await asyncio.gather(
            *(self._run_call(planned, pad.iteration) for planned in screened.calls)
        )
        observed = observe_round(
            screened.state,
            screened.calls,
            [(step.observation, step.status == "error") for step, _ in outcomes],
            max_repeats,
        )
        steps = [
            step.model_copy(update={"observation": text})
            for (step, _), text in zip(outcomes, observed.observations, strict=True)
        ]
        stopping = [step.observation for step, stop_run in outcomes if stop_run]
        children = list(self._delegated.values())
        costs = [c.cost_usd for c in children if c.cost_usd is not None]
        return Round(
            steps=steps,
            repetition=observed.state,
            stopped_by_tool=stopping[0] if stopping else None,
            repeated_tool=observed.stop_tool,
            spent=sum((c.usage for c in children), TokenUsage()),
            spent_cost_usd=sum(costs) if costs else None,
        )

    async def _run_call(self, planned: PlannedCall, iteration: int) -> tuple[ToolStep, bool]:
        """One call: refused, answered by a person, or run (perhaps after approval). Returns
        its step and whether the tool asked to end the run."""
        started = workflow.now()
        call = planned.call

        policy: PolicyVerdict | None = None

        def step(
            observation: str,
            status: StepStatus,
            args: dict[str, Any] | None,
            human: HumanDecision | None = None,
        ) -> ToolStep:
            child = self._delegated.get(call.id)
            return ToolStep(
                policy=policy.because if policy else None,
                child_workflow_id=child.workflow_id if child else None,
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
            self._log_refusal(call, planned.observation, "refused")
            return step(planned.observation, "error", None), False
        callee = self._callees[call.name]
        args = planned.args
        human: HumanDecision | None = None
        policy = verdict(self._params.approval_policy, callee.local, call.name, args)
        if policy.action == "deny":
            self._log_refusal(call, policy.because, "denied")
            return step(denied_observation(policy.because), "denied", args), False
        if callee.asks_user or policy.action == "ask":
            refusal = self._precheck(callee, call, args)
            if refusal is not None:
                policy = PolicyVerdict(policy.action, approvals.PRECHECK)
                observation = approvals.precheck_observation(call.name, refusal)
                return step(observation, "error", args), False
            request, human = await self._wait_for_person(callee, call, args)
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
        observation, status, stop_run = await self._execute(callee, call, args, iteration)
        note = approvals.edited_note(human) if human else None
        text = f"{note}\n{observation}" if note else observation
        return step(text, status, args, human), stop_run

    def _precheck(self, item: Callee, call: ToolCall, args: dict[str, Any]) -> str | None:
        """Why a call about to wait for a person can never succeed, per its tool's `precheck`
        (`ToolOptions.precheck`), or None: then the person is asked.

        A precheck that raises (or returns something odd) is a bug in the tool: it is logged and
        the person is asked as if there were no precheck, so the workflow task never fails on
        it. Refusing is behind the `tool-precheck` patch, asked only when a precheck refuses: a
        run recorded before it asked a person about such a call and replays that way, and a run
        whose prechecks all pass carries no patch marker."""
        tool = item.local
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
        if reason is None or not workflow.patched(PRECHECK_PATCH):
            return None
        self._log_refusal(call, reason, "refused by precheck")
        return reason

    async def _wait_for_person(
        self, item: Callee, call: ToolCall, args: dict[str, Any]
    ) -> tuple[PendingRequest, HumanDecision]:
        seconds, action = approvals.wait_limits(
            item.options,
            self._params.approval_timeout_seconds,
            self._params.approval_timeout_action,
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

    def _activity_input(
        self, item: Callee, call: ToolCall, args: dict[str, Any], iteration: int
    ) -> tuple[ToolInvocation | McpCallRequest, str]:
        """The call's activity input and summary: a local tool's, or an MCP server's (whose
        summary names the server and the tool)."""
        key = f"{run_scope(self._params)}/{iteration}/{call.id}"
        limit = self._params.max_observation_chars
        if item.mcp is not None:
            spec = item.mcp
            request = McpCallRequest(
                server=spec.server,
                tool=spec.name,
                args=args,
                call_id=call.id,
                idempotency_key=key,
                max_output_chars=limit,
            )
            return request, shorten(f"{spec.server} · {spec.name} {tool_call_summary(args)}")
        invocation = ToolInvocation(
            call_id=call.id,
            tool=item.name,
            args=args,
            idempotency_key=key,
            max_output_chars=limit,
            scope=self._params.memory_scope,
        )
        return invocation, tool_call_summary(args)

    async def _execute(
        self, item: Callee, call: ToolCall, args: dict[str, Any], iteration: int
    ) -> tuple[str, StepStatus, bool]:
        """Run the call's activity (named after the tool): (observation, status, stop_run). A
        failure becomes an `Error: ...` observation unless the tool is set to stop the run.

        An agent profile runs as a child workflow instead (see `workflows.delegation`)."""
        options = item.options
        started = workflow.now()
        if item.agent is not None:
            done = await run_child(
                self._params, self._pad, item.agent, args["task"], call.id, self._children
            )
            self._delegated[call.id] = done
            self._log_tool(item, call, "error" if done.failed else "ok", started)
            return done.observation, "error" if done.failed else "ok", False
        activity_input, summary = self._activity_input(item, call, args, iteration)
        try:
            output = await self._run_activity(item, activity_input, summary)
        except ActivityError as error:
            if is_cancelled_exception(error):
                raise
            observation = failure_observation(tool_failure(error, options))
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

    async def _run_activity(
        self, item: Callee, activity_input: ToolInvocation | McpCallRequest, summary: str
    ) -> ToolOutput:
        """The call's activity: a local activity for a tool compiled into the worker that opted
        in (`ToolOptions.local`), otherwise a regular one on the tool's task queue. Both fail
        with an `ActivityError` (see `local_activity_error`), so the caller reads a failure the
        same way.

        The local path is behind the `local-tools` patch, asked only for a `local=True` tool: a
        run recorded before it scheduled such a call as a regular activity and replays that
        way, and a run that never calls one carries no patch marker."""
        options = item.options
        if item.local is not None and options.local and workflow.patched(LOCAL_TOOLS_PATCH):
            try:
                output: ToolOutput = await workflow.execute_local_activity(
                    item.name,
                    activity_input,
                    result_type=ToolOutput,
                    start_to_close_timeout=options.start_to_close_timeout,
                    retry_policy=options.effective_retry_policy,
                    cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                    summary=summary,
                )
            except (ApplicationError, TimeoutError) as failure:
                raise local_activity_error(item.name, failure, options) from failure
            return output
        output = await workflow.execute_activity(
            item.name,
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
