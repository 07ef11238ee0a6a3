"""The `final_answer` tool: the model ends the run with an explicit answer.

Useful with models that like to keep calling tools, and for answers that must come through a
tool call. It returns `StopRun`, so the run finishes with stop_reason `stopped_by_tool`; other
calls of the same answer still complete first.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, Field

from durable_agents.tools.definition import StopRun, tool


class FinalAnswerArgs(BaseModel):
    """Arguments of the `final_answer` tool."""

    answer: str = Field(min_length=1, description="The complete final answer for the user.")


@tool(start_to_close_timeout=timedelta(seconds=5))
async def final_answer(args: FinalAnswerArgs) -> StopRun:
    """Give the final answer and end the task. Call it only when the task is complete."""
    return StopRun(args.answer)
