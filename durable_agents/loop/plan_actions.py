"""A plan's tool actions as the engine runs them: the call a step makes (its references put
in), how its step ends, and the limits that apply to it. The call itself goes through the same
round as a model's call (`workflows.tool_round`): validation, policy, approvals, repetition.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

from durable_agents.contracts.agent_input import AgentInput
from durable_agents.contracts.agent_result import ToolStep
from durable_agents.contracts.messages import ToolCall
from durable_agents.contracts.model_io import ModelReply
from durable_agents.contracts.plan import PlanState, StepOutcome
from durable_agents.loop.plan_refs import MissingResult, resolve_args, step_results
from durable_agents.loop.stop import Limits


def action_call_id(state: PlanState, index: int) -> str:
    """`step-<n>` (`step-<n>-r<k>` after k revisions: a revised step may reuse a number)."""
    return f"step-{index + 1}" + (f"-r{state.replans}" if state.replans else "")


def action_reply(state: PlanState, index: int) -> ModelReply | str:
    """Step `index`'s tool call as a reply the tool round runs (no model made it: `model` is
    the plan's), or why it cannot be made (an earlier result it uses is missing)."""
    step = state.steps[index]
    if step.tool is None:
        raise ValueError(f"step {index + 1} is a goal, not a tool action")
    try:
        args = resolve_args(step.args or {}, step_results(state))
    except MissingResult as error:
        return f"Error: {error}"
    call = ToolCall(
        id=action_call_id(state, index),
        name=step.tool,
        arguments=json.dumps(args, ensure_ascii=False),
    )
    return ModelReply(model="plan", tool_calls=[call])


def action_outcome(
    state: PlanState, index: int, step: ToolStep | None, refusal: str
) -> StepOutcome:
    """How a tool action ended: done when its call ran `ok`; failed when it errored, was denied
    or rejected, or could not be made (`refusal`, with no step)."""
    goal = state.steps[index].goal
    if step is None:
        return StepOutcome(index=index + 1, goal=goal, status="failed", answer=refusal)
    return StepOutcome(
        index=index + 1,
        goal=goal,
        status="done" if step.status == "ok" else "failed",
        answer=step.observation,
        workflow_id=step.child_workflow_id,
        call_id=step.call_id,
    )


def action_limits(params: AgentInput) -> Limits:
    """The run's token and cost budgets. `max_iterations` bounds each goal step's own loop, not
    the plan, so it does not stop a tool action."""
    return replace(Limits.of(params), max_iterations=sys.maxsize)
