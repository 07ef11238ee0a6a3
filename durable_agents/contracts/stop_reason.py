"""`StopReason`: why a run's loop stopped, and what follows from it.

One enum, matched exhaustively (mypy flags a reason added without saying what it means):
whether the run answered (`answered`: the answer is the agent's, a session remembers it, the
CLI exits 0, a parent reads it as the sub-agent's answer), what a person reads
(`description`), and what a session remembers of a turn that stopped without an answer
(`incomplete_note`). The values are the strings the result's JSON has always carried.
"""

from __future__ import annotations

from enum import StrEnum
from typing import assert_never


class StopReason(StrEnum):
    COMPLETED = "completed"
    MAX_ITERATIONS = "max_iterations"
    EMPTY_ANSWER = "empty_answer"
    TOKEN_BUDGET = "token_budget"
    COST_BUDGET = "cost_budget"
    REPEATED_CALLS = "repeated_calls"
    STOPPED_BY_TOOL = "stopped_by_tool"
    INVALID_OUTPUT = "invalid_output"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"
    PLAN_REJECTED = "plan_rejected"

    @property
    def answered(self) -> bool:
        """Whether the run's answer is the agent's answer (not a limit's stop text)."""
        return self.incomplete_note is None

    @property
    def incomplete_note(self) -> str | None:
        """Why a run that stopped here has no answer (`it reached its limit of model calls`),
        or None when it answered."""
        match self:
            case StopReason.COMPLETED | StopReason.STOPPED_BY_TOOL:
                return None
            case StopReason.MAX_ITERATIONS:
                return "it reached its limit of model calls (max_iterations)"
            case StopReason.TOKEN_BUDGET:
                return "it used up its token budget (max_total_tokens)"
            case StopReason.COST_BUDGET:
                return "it used up its cost budget (cost_budget)"
            case StopReason.REPEATED_CALLS:
                return "it kept repeating the same tool call and was stopped (max_repeated_calls)"
            case StopReason.EMPTY_ANSWER:
                return "the model gave an empty reply"
            case StopReason.INVALID_OUTPUT:
                return "its answer did not match the requested output schema (output_retries)"
            case StopReason.LENGTH:
                return "the model's reply was cut off at its output token limit"
            case StopReason.CONTENT_FILTER:
                return "the model provider's content filter stopped the reply"
            case StopReason.PLAN_REJECTED:
                return "its plan was rejected (max_replans)"
            case _ as unreachable:
                assert_never(unreachable)

    @property
    def description(self) -> str:
        """How a person reads it: `completed`, or `stopped: <why>`."""
        note = self.incomplete_note
        if note is None:
            return "completed" if self is StopReason.COMPLETED else "stopped by a tool's answer"
        return f"stopped: {note}"
