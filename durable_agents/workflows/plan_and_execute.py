"""Plan-and-execute mode (`"mode": "plan_and_execute"`), seed 003's plan that is kept in
state, shown to the user and revised when the world disagrees with it.

1. A planning model call answers with a typed plan (`submit_plan`). Each step is a tool action
   (`{"tool", "args"}`: the engine runs the call, no model call) or a goal that needs reasoning;
   a tool action's arguments may use earlier results (`${steps.<n>.result}`); a step may state
   what its result should be (`expect`). A plan whose references do not look back, or whose
   tool actions name tools the run lacks, is asked for again with the problems.
2. With `plan_approval`, the plan waits as a pending request of kind `plan`: `approve`,
   `reject` (with a reason: the model replans) or the `edit_plan` update; timeouts as for
   approvals.
3. A tool action runs through the run's `ToolRound`, exactly as a call the model asked for:
   argument validation, approval policy, approvals and questions, repetition guard; then the
   run's token and cost budgets are checked. A goal runs as a bounded ReAct loop: a child
   `AgentWorkflow` (`<run id>/step-<n>`) told the request, the whole plan and its place in it,
   the earlier results and its goal, under the run's policy, tools and remaining budgets.
4. The plan is revised (a replanning call that replaces the steps not done, at most
   `max_replans` times) when a step fails, when its result misses its expectation (plain
   comparisons decide alone; only a `check` in words takes a model call), and, at the next step
   boundary, when a `steer` message arrived while the steps ran. Each revision records why.
5. A synthesis call writes the answer from the steps' results; or, when the plan states the
   answer as a template over them and every step was a tool action that succeeded (and nobody
   steered), the engine fills the template in and makes no synthesis call
   (`loop.plan_answer`).

The plan lives in the scratchpad, so `status`, the Web UI's details and the result show it.
"""

from __future__ import annotations

from typing import Protocol

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_input import AgentInput
    from durable_agents.contracts.agent_status import Phase
    from durable_agents.contracts.agents import AgentProfile
    from durable_agents.contracts.approvals import HumanDecision
    from durable_agents.contracts.errors import HUMAN_WAIT_TIMED_OUT
    from durable_agents.contracts.messages import ChatMessage
    from durable_agents.contracts.model_io import ToolSchema
    from durable_agents.contracts.plan import Plan, PlanState, PlanStep, StepOutcome
    from durable_agents.contracts.request_kind import RequestKind
    from durable_agents.contracts.scratchpad import Scratchpad
    from durable_agents.contracts.stop_reason import StopReason
    from durable_agents.loop import approvals
    from durable_agents.loop.plan import (
        SUBMIT_PLAN_TOOL,
        done_count,
        new_plan,
        next_step,
        plan_args,
        plan_tool,
        planning_request,
        read_plan,
        retry_note,
        revised,
        step_task,
        synthesis_request,
        with_notes,
        with_outcome,
        with_status,
    )
    from durable_agents.loop.plan_actions import action_limits, action_outcome, action_reply
    from durable_agents.loop.plan_answer import templated_answer
    from durable_agents.loop.plan_expect import (
        CHECK_TOOL,
        Verdict,
        check_request,
        check_tool,
        plain_verdict,
        read_check,
    )
    from durable_agents.loop.plan_refs import plan_problems
    from durable_agents.loop.progress import (
        next_iteration,
        with_model_call,
        with_round,
        with_spending,
    )
    from durable_agents.loop.stop import Outcome, Stop, decide_stop
    from durable_agents.loop.summaries import shorten
    from durable_agents.tools.definition import ToolOptions
    from durable_agents.workflows.delegation import ChildRequests, run_child
    from durable_agents.workflows.human_gate import HumanGate
    from durable_agents.workflows.model_gateway import ModelGateway
    from durable_agents.workflows.run_log import RunLog
    from durable_agents.workflows.run_tools import RunTools
    from durable_agents.workflows.tool_round import ToolRound

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
        tools: RunTools,
        children: ChildRequests,
    ):
        self._params = params
        self._host = host
        self._model = model
        self._gate = gate
        self._log = log
        self._tools: list[ToolSchema] = tools.schemas
        self._tool_names = tools.names
        self._round = ToolRound(params, tools.callees, gate, log, children, tools.unavailable)
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
        while next_step(self._plan) is not None:
            await self._replan_if_steered()
            index = next_step(self._plan)
            if index is None:
                break
            outcome, stop = await self._run_step(index)
            if stop is not None:
                self._set_plan(with_outcome(self._plan, outcome))
                return stop
            outcome = await self._checked(index, outcome)
            self._set_plan(with_outcome(self._plan, outcome))
            if outcome.status == "failed" and self._plan.replans < self._params.max_replans:
                feedback = (
                    f"Step {outcome.index} failed: {outcome.answer}"
                    if outcome.expectation is None
                    else f"Step {outcome.index}'s result does not meet its expectation "
                    f"({outcome.expectation}): {outcome.answer}"
                )
                await self._revise(feedback)
        return await self._synthesise()

    async def _revise(self, feedback: str) -> None:
        """Replace the steps not done with a replanning call's steps."""
        plan = await self._ask_plan(self._plan, feedback)
        self._set_plan(revised(self._plan, plan, shorten(feedback, 500)))

    async def _ask_plan(self, state: PlanState | None, feedback: str | None) -> Plan:
        """A planning (or replanning) call; an unusable answer is asked again once (told what
        was wrong), then the whole request becomes a one-step plan."""
        self._host.pad = next_iteration(self._host.pad)
        self._host.set_phase("thinking")
        planned = planning_request(self._params.prompt, self._tools, state, feedback)
        messages = planned
        first = done_count(state) + 1 if state is not None else 1
        for _ in range(MAX_PLANNING_TRIES):
            answer = await self._model.once(self._host.pad, messages, "plan", [plan_tool()])
            self._host.pad = with_model_call(self._host.pad, answer)
            calls = [c for c in answer.reply.tool_calls if c.name == SUBMIT_PLAN_TOOL]
            plan = read_plan(calls[0].arguments) if calls else "no submit_plan call"
            if isinstance(plan, Plan):
                plan = self._usable(plan, first)
            if isinstance(plan, Plan):
                return plan
            self._log("the planning call gave no usable plan: %s", plan, outcome="replanning")
            messages = [*planned, ChatMessage.user(retry_note(plan))]
        return Plan(steps=[PlanStep(goal=self._params.prompt[:2_000])])

    def _usable(self, plan: Plan, first: int) -> Plan | str:
        """The plan, or why it cannot run (its steps numbered from `first`)."""
        problems = plan_problems(plan.steps, first, self._tool_names, plan.answer)
        return "; ".join(problems) if problems else plan

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
                # what people said while the plan waited, its approver saw: notes, no replan
                self._take_steering()
                return None
            why = decision.reason or "the reviewer rejected the plan"
            if decision.outcome == "timed_out" or self._plan.replans >= self._params.max_replans:
                return Stop(StopReason.PLAN_REJECTED, f"The plan was not approved: {why}")
            await self._revise(why)

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

    async def _run_step(self, index: int) -> tuple[StepOutcome, Stop | None]:
        """One step: a tool action run by the engine, or a goal run as a child run. A tool
        action may end the run (a budget used up, a stop tool, a repeated call)."""
        self._set_plan(with_status(self._plan, index, "running"))
        if self._plan.steps[index].tool is not None:
            return await self._run_action(index)
        return await self._run_goal(index), None

    async def _run_action(self, index: int) -> tuple[StepOutcome, Stop | None]:
        """The step's call through the run's tool round, as if the model had asked for it:
        validation, policy, approvals, repetition; then the budgets, as after any round."""
        self._take_steering()
        limits = action_limits(self._params)
        stop = decide_stop(self._host.pad, limits, Outcome())
        if stop is not None:  # a budget used up already: the run stops, as after a model call
            return action_outcome(self._plan, index, None, f"Error: not run: {stop.answer}"), stop
        reply = action_reply(self._plan, index)
        if isinstance(reply, str):  # an earlier result it uses is missing
            return action_outcome(self._plan, index, None, reply), None
        done = await self._round.run(self._host.pad, reply)
        self._host.pad = with_round(self._host.pad, reply, done)
        stop = decide_stop(self._host.pad, limits, done.outcome)
        step = done.steps[0] if done.steps else None
        refusal = f"Error: not run: {stop.answer}" if stop is not None else "Error: not run"
        return action_outcome(self._plan, index, step, refusal), stop

    async def _run_goal(self, index: int) -> StepOutcome:
        """One goal step as a child run (`<run id>/step-<n>`)."""
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
            model_calls=done.iterations,
        )

    async def _checked(self, index: int, outcome: StepOutcome) -> StepOutcome:
        """A done step whose planner stated an expectation, checked: by comparison, or (for a
        `check` in words) by a model call. A result that misses it makes the step failed."""
        expect = self._plan.steps[index].expect
        if expect is None or outcome.status != "done":
            return outcome
        verdict = plain_verdict(expect, outcome.answer)
        if verdict is None:
            verdict = await self._ask_check(index, outcome.answer)
        update: dict[str, object] = {"expectation": verdict.describe()}
        if not verdict.met:
            update["status"] = "failed"
        return outcome.model_copy(update=update)

    async def _ask_check(self, index: int, result: str) -> Verdict:
        """A model call: does the result meet the step's `check`? No usable verdict counts as
        met (the plan goes on; the outcome says it was not checked)."""
        self._host.pad = next_iteration(self._host.pad)
        self._host.set_phase("thinking")
        messages = check_request(self._params.prompt, self._plan, index, result)
        answer = await self._model.once(self._host.pad, messages, "plan", [check_tool()])
        self._host.pad = with_model_call(self._host.pad, answer)
        calls = [c for c in answer.reply.tool_calls if c.name == CHECK_TOOL]
        verdict = read_check(calls[0].arguments) if calls else "no report_check call"
        if isinstance(verdict, Verdict):
            return verdict
        self._log("the check call gave no verdict: %s", verdict, outcome="unchecked")
        return Verdict(True, f"not checked ({verdict})")

    async def _replan_if_steered(self) -> None:
        """At a step boundary: steering messages that arrived while the steps ran revise the
        plan (recorded as a revision), and stay notes for the steps and the final answer."""
        steering = self._host.pad.steering
        if not steering:
            return
        self._take_steering()
        if self._plan.replans >= self._params.max_replans:
            return
        said = "; ".join(f"{s.by or 'the user'}: {s.text}" for s in steering)
        await self._revise(f"While the plan ran, people said (follow them): {said}")

    def _take_steering(self) -> None:
        """Messages people sent with `steer` become the plan's notes (the next steps and the
        final answer read them); they are no longer waiting."""
        pad = self._host.pad
        if pad.steering:
            plan = with_notes(self._plan, pad.steering)
            self._host.pad = pad.model_copy(update={"plan": plan, "steering": []})

    async def _synthesise(self) -> Stop:
        """The final answer: the plan's answer template filled in, when it stands as the answer
        (`templated_answer`), else a synthesis call from the steps' results."""
        self._take_steering()
        filled = templated_answer(self._plan)
        if filled is not None:
            self._log("the plan's answer template is the answer: no synthesis call")
            return Stop(StopReason.COMPLETED, filled)
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
