"""Plan-and-execute mode (`"mode": "plan_and_execute"`), seed 003's plan that is kept in
state, shown to the user and revised when a step fails.

1. A planning model call answers with a typed plan (`submit_plan`: steps, each a goal and
   optionally the tools it expects).
2. With `plan_approval`, the plan waits as a pending request of kind `plan`: `approve`,
   `reject` (with a reason: the model replans) or the `edit_plan` update; timeouts as for
   approvals.
3. Each step runs as a bounded ReAct loop: a child `AgentWorkflow` (`<run id>/step-<n>`, its
   own run in the Web UI) told the request, the earlier steps' results and its goal, under the
   run's policy, tools and remaining budgets.
4. A step that fails or stops at a limit triggers a replanning call that revises the remaining
   steps, at most `max_replans` times.
5. A synthesis call writes the answer from the steps' results.

The plan lives in the scratchpad, so `status`, the Web UI's details and the result show it.
"""

from __future__ import annotations

from typing import Protocol

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.agent_input import AgentInput
    from contracts.agent_status import Phase
    from contracts.agents import AgentProfile
    from contracts.approvals import HumanDecision
    from contracts.errors import HUMAN_WAIT_TIMED_OUT
    from contracts.model_io import ToolSchema
    from contracts.plan import Plan, PlanState, PlanStep, StepOutcome
    from contracts.request_kind import RequestKind
    from contracts.scratchpad import Scratchpad
    from contracts.stop_reason import StopReason
    from loop import approvals
    from loop.plan import (
        SUBMIT_PLAN_TOOL,
        new_plan,
        next_step,
        plan_args,
        plan_tool,
        planning_request,
        read_plan,
        revised,
        step_task,
        synthesis_request,
        with_notes,
        with_outcome,
        with_status,
    )
    from loop.progress import next_iteration, with_model_call, with_spending
    from loop.stop import Stop
    from tools.definition import ToolOptions
    from workflows.delegation import ChildRequests, run_child
    from workflows.human_gate import HumanGate
    from workflows.model_gateway import ModelGateway
    from workflows.run_log import RunLog

PLAN_TOOL_NAME = "plan"
"""The `tool` of a plan's approval request (its arguments are the plan)."""
MAX_PLANNING_TRIES = 2


class PlanHost(Protocol):
    """What the runner needs of the workflow: its scratchpad and its phase."""

    pad: Scratchpad

    def set_phase(self, phase: Phase) -> None: ...


class PlanRunner:
    """Runs one plan-and-execute run to its `Stop`."""

    def __init__(
        self,
        params: AgentInput,
        host: PlanHost,
        model: ModelGateway,
        gate: HumanGate,
        log: RunLog,
        tools: list[ToolSchema],
        children: ChildRequests,
    ):
        self._params = params
        self._host = host
        self._model = model
        self._gate = gate
        self._log = log
        self._tools = tools
        self._children = children
        gate.add_schemas({PLAN_TOOL_NAME: Plan})

    @property
    def _plan(self) -> PlanState:
        """The plan (made by the first planning call, before anything reads it)."""
        return self._host.pad.plan or new_plan(Plan(steps=[PlanStep(goal=self._params.prompt)]))

    def _set_plan(self, plan: PlanState) -> None:
        self._host.pad = self._host.pad.model_copy(update={"plan": plan})
        self._host.set_phase("running_tools")

    async def run(self) -> Stop:
        if self._host.pad.plan is None:
            self._set_plan(new_plan(await self._ask_plan(None, None)))
        rejected = await self._approve()
        if rejected is not None:
            return rejected
        while (index := next_step(self._plan)) is not None:
            outcome = await self._run_step(index)
            self._set_plan(with_outcome(self._plan, outcome))
            if outcome.status == "failed" and self._plan.replans < self._params.max_replans:
                feedback = f"Step {outcome.index} failed: {outcome.answer}"
                self._set_plan(revised(self._plan, await self._ask_plan(self._plan, feedback)))
        return await self._synthesise()

    async def _ask_plan(self, state: PlanState | None, feedback: str | None) -> Plan:
        """A planning (or replanning) call; an unusable answer is asked again once, then the
        whole request becomes a one-step plan."""
        self._host.pad = next_iteration(self._host.pad)
        self._host.set_phase("thinking")
        messages = planning_request(self._params.prompt, self._tools, state, feedback)
        for _ in range(MAX_PLANNING_TRIES):
            answer = await self._model.once(self._host.pad, messages, "plan", [plan_tool()])
            self._host.pad = with_model_call(self._host.pad, answer)
            calls = [c for c in answer.reply.tool_calls if c.name == SUBMIT_PLAN_TOOL]
            plan = read_plan(calls[0].arguments) if calls else "no submit_plan call"
            if isinstance(plan, Plan):
                return plan
            self._log("the planning call gave no usable plan: %s", plan, outcome="replanning")
        return Plan(steps=[PlanStep(goal=self._params.prompt[:2_000])])

    async def _approve(self) -> Stop | None:
        """With `plan_approval`, wait for a person: approved (perhaps edited) goes on; a
        rejection with a reason is replanned (up to `max_replans`), then the run stops."""
        if not self._params.plan_approval:
            return None
        while True:
            decision = await self._wait_for_person()
            if approvals.should_run(decision):
                edited = Plan.model_validate(decision.executed_args or plan_args(self._plan))
                state = self._plan
                if decision.outcome == "edited":
                    state = new_plan(edited).model_copy(
                        update={"revisions": [*state.revisions, edited], "replans": state.replans}
                    )
                self._set_plan(state.model_copy(update={"approved": True}))
                return None
            why = decision.reason or "the reviewer rejected the plan"
            if decision.outcome == "timed_out" or self._plan.replans >= self._params.max_replans:
                return Stop(StopReason.PLAN_REJECTED, f"The plan was not approved: {why}")
            self._set_plan(revised(self._plan, await self._ask_plan(self._plan, why)))

    async def _wait_for_person(self) -> HumanDecision:
        seconds, action = approvals.wait_limits(
            ToolOptions(),
            self._params.approval_timeout_seconds,
            self._params.approval_timeout_action,
        )
        request = approvals.open_request(
            kind=RequestKind.PLAN,
            workflow_id=workflow.info().workflow_id,
            call_id=f"plan-{len(self._plan.revisions)}",
            tool=PLAN_TOOL_NAME,
            args=plan_args(self._plan),
            now=workflow.now(),
            timeout_seconds=seconds,
            on_timeout=action,
        )
        self._host.set_phase("waiting_for_human")
        decision = await self._gate.wait(request)
        if decision.outcome == "timed_out" and decision.timeout_action == "fail":
            raise ApplicationError(
                f"the plan's approval timed out after {approvals.waited_seconds(request):g}s "
                "and the timeout action is 'fail'",
                type=HUMAN_WAIT_TIMED_OUT,
                non_retryable=True,
            )
        return decision

    async def _run_step(self, index: int) -> StepOutcome:
        """One step as a child run (`<run id>/step-<n>`)."""
        self._set_plan(with_status(self._plan, index, "running"))
        step = self._plan.steps[index]
        profile = AgentProfile(
            name="step",
            description=step.goal,
            system_prompt=self._params.system_prompt,
            tools=step.tools if step.tools is not None else self._params.tools,
            agents=self._params.agents or [],
            max_iterations=self._params.max_iterations,
        )
        self._take_steering()
        task = step_task(self._params.prompt, self._plan, index)
        done = await run_child(
            self._params, self._host.pad, profile, task, str(index + 1), self._children
        )
        self._host.pad = with_spending(self._host.pad, done.usage, done.cost_usd)
        failed = not done.answered
        return StepOutcome(
            index=index + 1,
            goal=step.goal,
            status="failed" if failed else "done",
            answer=done.observation,
            workflow_id=done.workflow_id,
            stop_reason=done.stop_reason,
        )

    def _take_steering(self) -> None:
        """Messages people sent with `steer` become the plan's notes (the next steps and the
        final answer read them); they are no longer waiting."""
        pad = self._host.pad
        if pad.steering:
            plan = with_notes(self._plan, pad.steering)
            self._host.pad = pad.model_copy(update={"plan": plan, "steering": []})

    async def _synthesise(self) -> Stop:
        self._take_steering()
        self._host.pad = next_iteration(self._host.pad)
        self._host.set_phase("thinking")
        messages = synthesis_request(self._params.prompt, self._plan)
        answer = await self._model.once(self._host.pad, messages, "synthesis")
        self._host.pad = with_model_call(self._host.pad, answer)
        text = (answer.reply.content or "").strip()
        if not text:
            return Stop(
                StopReason.EMPTY_ANSWER, "The model wrote no final answer from the plan's steps."
            )
        return Stop(StopReason.COMPLETED, text)
