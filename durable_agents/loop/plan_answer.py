"""A plan's answer template: when the engine fills it in instead of asking a model to write the
final answer.

A planner that knows what the answer will say states it as a template over the steps' results
(`"answer": "The answer is ${steps.2.result}."`, checked when the plan is made like the steps'
references). The template is the answer, with no synthesis call, only when nothing happened
that the planner could not foresee:

- every step of the plan is a tool action, and every one is done (it ran, and met its
  expectation if it stated one): a goal step's result is free text a model should read;
- no step failed on the way (a failure before a revision is something the answer should
  perhaps tell);
- nobody sent a message (`steer`) while the plan ran: the plan's notes are for the final answer.

Otherwise the synthesis call writes the answer, as for a plan with no template.
"""

from __future__ import annotations

from durable_agents.contracts.plan import PlanState
from durable_agents.loop.plan_refs import MissingResult, put_in, step_results


def templated_answer(state: PlanState) -> str | None:
    """The plan's answer template with the steps' results put in, when it stands as the final
    answer (the rule above), else None (a synthesis call writes it)."""
    if state.answer is None or state.notes:
        return None
    if not all(step.is_action for step in state.steps):
        return None
    if any(status != "done" for status in state.status):
        return None
    if any(outcome.status != "done" for outcome in state.outcomes):
        return None
    try:
        filled = put_in(state.answer, step_results(state)).strip()
    except MissingResult:
        return None
    return filled or None
