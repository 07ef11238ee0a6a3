"""The `ask_user` tool: the model asks the user a question and the run waits for the reply.

It is not an activity: the workflow records the open question and waits durably (hours or days,
through worker restarts) for a `reply` signal; the reply text becomes the observation.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from durable_agents.tools.definition import question_tool


class AskUserArgs(BaseModel):
    """Arguments of the `ask_user` tool."""

    question: str = Field(
        min_length=1, max_length=4000, description="The question to ask, in full sentences."
    )


ask_user = question_tool(
    name="ask_user",
    description=(
        "Ask the user a question and wait for their reply. Use it when information you need "
        "is missing or a choice is the user's to make; do not guess."
    ),
    args_model=AskUserArgs,
)
