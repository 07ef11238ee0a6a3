"""Whether the run stops now, and with what answer (n8n's checkMaxIterations, grown up).

One pure decision, asked at two points of every iteration: after the model's reply has been
read, and after a round of tools has run. It covers, in this order of precedence:

1. a final answer (returned even when a budget is passed: the work is done);
2. an answer that cannot be used: empty after the nudge (`empty_answer`), still invalid for the
   output schema after the retries (`invalid_output`), cut off at the provider's token limit
   (`length`: never returned as if complete), or stopped by its content filter
   (`content_filter`);
3. a tool that ended the run (`stopped_by_tool`: `final_answer`, or a tool returning `StopRun`);
4. a model that kept repeating a call or an error after it was warned (`repeated_calls`);
5. a token or cost budget used up (`token_budget`, `cost_budget`);
6. the last allowed iteration reached without an answer (`max_iterations`): tools asked for in
   it do not run, since no model call is left to read their results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from durable_agents.contracts.agent_input import AgentInput
from durable_agents.contracts.agent_result import StopReason
from durable_agents.contracts.scratchpad import Scratchpad
from durable_agents.loop.budgets import budget_exceeded, budget_message
from durable_agents.loop.limits import max_iterations_message
from durable_agents.loop.repetition import repeated_calls_message


@dataclass(frozen=True)
class Limits:
    """The limits a run was started with (from `AgentInput`)."""

    max_iterations: int
    max_total_tokens: int | None = None
    max_usd: float | None = None

    @classmethod
    def of(cls, params: AgentInput) -> Limits:
        return cls(
            max_iterations=params.max_iterations,
            max_total_tokens=params.max_total_tokens,
            max_usd=params.cost_budget.max_usd if params.cost_budget else None,
        )


@dataclass(frozen=True)
class Stop:
    """The run ends: why, and the answer it returns."""

    reason: StopReason
    answer: str
    output: Any = None
    """The validated typed answer (with an output schema)."""


@dataclass(frozen=True)
class Outcome:
    """What the latest step of the loop produced, as far as stopping is concerned."""

    answer: str | None = None
    """Text of a final answer."""
    output: Any = None
    """The validated typed answer, with an output schema."""
    gave_up: str | None = None
    """The model answered empty again after the nudge; this is the text to return."""
    invalid_output: str | None = None
    """The last answer, still invalid for the output schema after the retries."""
    cut_off: str | None = None
    """The reply was cut off at the provider's token limit (`finish_reason: length`)."""
    filtered: str | None = None
    """The provider's content filter stopped the reply (`finish_reason: content_filter`)."""
    stopped_by_tool: str | None = None
    """Answer of a tool that ended the run."""
    repeated_tool: str | None = None
    """Tool the model kept repeating after the warning."""


def decide_stop(pad: Scratchpad, limits: Limits, outcome: Outcome) -> Stop | None:
    """The stop reason and answer, or None to go on (see the module docstring for the order)."""
    if outcome.answer is not None:
        return Stop(StopReason.COMPLETED, outcome.answer, outcome.output)
    if outcome.gave_up is not None:
        return Stop(StopReason.EMPTY_ANSWER, outcome.gave_up)
    if outcome.invalid_output is not None:
        return Stop(StopReason.INVALID_OUTPUT, outcome.invalid_output)
    if outcome.cut_off is not None:
        return Stop(StopReason.LENGTH, outcome.cut_off)
    if outcome.filtered is not None:
        return Stop(StopReason.CONTENT_FILTER, outcome.filtered)
    if outcome.stopped_by_tool is not None:
        return Stop(StopReason.STOPPED_BY_TOOL, outcome.stopped_by_tool)
    if outcome.repeated_tool is not None:
        return Stop(StopReason.REPEATED_CALLS, repeated_calls_message(outcome.repeated_tool))
    budget = budget_exceeded(pad.usage, pad.cost_usd, limits.max_total_tokens, limits.max_usd)
    if budget is not None:
        limit = (
            float(limits.max_total_tokens or 0) if budget == "token_budget" else limits.max_usd or 0
        )
        return Stop(budget, budget_message(budget, pad.usage, pad.cost_usd, limit))
    if pad.iteration >= limits.max_iterations:
        return Stop(StopReason.MAX_ITERATIONS, max_iterations_message(limits.max_iterations))
    return None
