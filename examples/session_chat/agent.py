"""The concierge: an agent with one tool of its own, talked to in a session.

A session (`SessionWorkflow`) is a conversation whose workflow id is the session id: each
message is one turn of this agent, which sees the turns before it. The session's settings
name the agent's instructions, tools and model, so a session runs this agent's turns.
"""

from __future__ import annotations

from typing import Any

from durable_agents import Agent, ToolError

HOURS = {"monday": "9-18", "saturday": "10-14", "sunday": "closed"}
"""The opening hours the tool knows, by day."""

concierge: Agent[None] = Agent(
    "concierge",
    instructions=(
        "You are a hotel concierge. Answer questions about opening hours with the "
        "opening_hours tool, and remember what the guest told you earlier in the conversation."
    ),
)


@concierge.tool
async def opening_hours(day: str) -> str:
    """The spa's opening hours on a day of the week.

    Args:
        day: The day, in English (`monday`).
    """
    hours = HOURS.get(day.lower())
    if hours is None:
        raise ToolError(f"no hours for {day!r}; ask about one of {', '.join(HOURS)}")
    return hours


def session_settings() -> dict[str, Any]:
    """The session's input: its turns are the concierge's (instructions, tools, model)."""
    agent: dict[str, Any] = {
        "system_prompt": concierge.instructions,
        "tools": concierge.tool_names,
    }
    if concierge.model_name is not None:
        agent["model"] = concierge.model_name
    return {"agent": agent}
