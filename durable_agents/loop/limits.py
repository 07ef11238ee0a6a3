"""Limits on the loop (n8n's checkMaxIterations)."""

from __future__ import annotations


def max_iterations_message(max_iterations: int) -> str:
    """The answer of a run that used up its iterations (n8n's wording)."""
    return (
        f"Max iterations ({max_iterations}) reached. The agent could not complete the task "
        "within the allowed number of iterations."
    )


FINAL_ANSWER_PROMPT = (
    "You have reached the maximum number of steps for this task. Do not call any tools. Using "
    "only the information above, give your best final answer now, and say what is still "
    "uncertain or missing."
)


def should_continue_as_new(
    *, events: int, size_bytes: int, suggested: bool, max_events: int, max_bytes: int
) -> bool:
    """Whether a run should continue-as-new now, to keep its history bounded: Temporal suggests
    it, or the history passed this run's event or byte threshold."""
    return suggested or events >= max_events or size_bytes >= max_bytes
