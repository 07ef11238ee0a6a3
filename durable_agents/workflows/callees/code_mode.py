"""`CodeMode`: the `run_code` tool of a run in code mode (`code_mode: true`), whose argument is a
Python script that calls the run's other callees as async functions.

The workflow steps through the script with the `run_script_step` activity (the pydantic-monty
sandbox, `activities.code_sandbox`): each step runs the script until it waits for tool calls
and returns the sandbox's dump and those calls. The calls go through a `ToolRound` of the run
(the same screening for repeats, approval policy, people's approvals, activities and logs as a
model's calls), and their observations resume the script in the next step. Every step and
every call is in history, so a script resumed after a worker crash goes on from its last step:
no call that finished runs again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.code_mode import (
        RUN_CODE_TOOL,
        SCRIPT_STEP_ACTIVITY,
        CodeLimits,
        RunCodeArgs,
        ScriptCall,
        ScriptStepInput,
        ScriptStepOutput,
    )
    from durable_agents.contracts.model_io import ModelReply, ToolSchema
    from durable_agents.contracts.scratchpad import Scratchpad
    from durable_agents.loop import code_mode
    from durable_agents.loop.code_mode import ScriptRequests
    from durable_agents.loop.tool_requests import ArgsSchema
    from durable_agents.workflows.callees.activity import failure_detail
    from durable_agents.workflows.callees.protocol import (
        CallContext,
        Callee,
        CallResult,
        PlainCallee,
    )

if TYPE_CHECKING:
    from durable_agents.workflows.tool_round import ToolRound

STEP_MARGIN = timedelta(seconds=30)
"""A step's activity timeout beyond the script's compute limit (starting the sandbox, type
checking, loading the dump)."""


class CodeMode(PlainCallee):
    """A `Callee` for `run_code`, over the callees a script may call."""

    def __init__(
        self,
        callees: Sequence[Callee],
        limits: CodeLimits,
        rounds: Callable[[Sequence[Callee]], ToolRound],
    ) -> None:
        self._tools = code_mode.script_tools([c.schema() for c in callees])
        names = {t.name for t in self._tools}
        self._callees = [c for c in callees if c.name in names]
        self._limits = limits
        self._round = rounds(self._callees)

    @property
    def callees(self) -> list[Callee]:
        """The callees a script may call."""
        return list(self._callees)

    @property
    def name(self) -> str:
        return RUN_CODE_TOOL

    @property
    def args_schema(self) -> ArgsSchema:
        return RunCodeArgs

    def schema(self) -> ToolSchema:
        return code_mode.run_code_schema(self._tools, self._limits)

    async def invoke(self, context: CallContext) -> CallResult:
        """Step the script to its end; each batch of calls it waits for is a round of tools."""
        base = ScriptStepInput(
            tools=[t.name for t in self._tools],
            stubs=code_mode.stubs(self._tools),
            limits=self._limits,
            max_output_chars=context.params.max_observation_chars,
        )
        steps = 1
        step = await self._step(base.model_copy(update={"code": context.args["code"]}), context, 1)
        if step is None:
            return CallResult("Error: the sandbox could not run the script", "error")
        output = [step.output]
        announced: dict[int, ScriptCall] = {}
        made = 0
        pad = context.pad
        while step.status == "calls":
            announced.update((c.id, c) for c in step.calls)
            waiting = [announced.pop(i) for i in step.pending if i in announced]
            made += len(waiting)
            if made > self._limits.max_tool_calls:
                return self._stopped(output, code_mode.calls_limit_error(self._limits))
            requests = code_mode.script_requests(context.call.id, waiting)
            answered = await self._answer_calls(pad, requests, output)
            if isinstance(answered, CallResult):
                return answered
            pad, results = answered
            steps += 1
            resumed = base.model_copy(
                update={"snapshot": step.snapshot, "results": results, "failed": requests.failed}
            )
            next_step = await self._step(resumed, context, steps)
            if next_step is None:
                return self._stopped(output, "the sandbox could not resume the script")
            step = next_step
            output.append(step.output)
        observation = code_mode.script_observation("".join(output), step.value, step.error)
        return CallResult(observation, "error" if step.status == "error" else "ok")

    async def _answer_calls(
        self, pad: Scratchpad, requests: ScriptRequests, output: list[str]
    ) -> CallResult | tuple[Scratchpad, dict[int, str]]:
        """Run the calls the script waits for as one round of tools: the run's scratchpad with
        the round's repetitions and each result by the script's call id; or how the `run_code`
        call ends (the round stopped on a repeat, or a tool ended the run)."""
        if not requests.calls:
            return pad, {}
        reply = ModelReply(model="", tool_calls=[call for _, call in requests.calls])
        done = await self._round.run(pad, reply)
        if done.repeated_tool is not None:
            return self._stopped(
                output,
                f"the script repeated calls of {done.repeated_tool} too often; it was stopped",
            )
        pad = pad.model_copy(update={"repetition": done.repetition or pad.repetition})
        if done.stopped_by_tool is not None:
            return CallResult(done.stopped_by_tool, "ok", stop_run=True)
        observed = {s.call_id: s.observation for s in done.steps}
        return pad, {i: observed[call.id] for i, call in requests.calls}

    def _stopped(self, output: list[str], why: str) -> CallResult:
        return CallResult(code_mode.script_observation("".join(output), None, why), "error")

    async def _step(
        self, step: ScriptStepInput, context: CallContext, number: int
    ) -> ScriptStepOutput | None:
        """One step as an activity; None when the sandbox itself failed for good (the script's
        own errors and limits are in the step's output)."""
        try:
            output: ScriptStepOutput = await workflow.execute_activity(
                SCRIPT_STEP_ACTIVITY,
                step,
                result_type=ScriptStepOutput,
                start_to_close_timeout=timedelta(seconds=self._limits.max_compute_seconds)
                + STEP_MARGIN,
                retry_policy=RetryPolicy(maximum_attempts=3),
                summary=f"{RUN_CODE_TOOL} {context.call.id}: step {number}",
            )
        except ActivityError as error:
            if is_cancelled_exception(error):
                raise
            detail = failure_detail(error)
            workflow.logger.warning(
                "script step %d of %s failed: %s", number, context.call.id, detail
            )
            return None
        return output
