"""Recorded tool outputs a run answers its tool calls with instead of running the tools
(`AgentSettings.tool_fixtures`): what `agent eval --from-runs` replays, so that an evaluation
of a new prompt or model against real recorded runs never runs a tool with side effects again.

A call is answered by the first recorded output of the same tool with the same arguments not
yet used (then by the last one again, a repeat of a recorded call); a call the recording has
no output for is not run either: its observation says so (`NEW_TOOL_CALL`), and the evaluation
reports it as a new tool call.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_TOOL_FIXTURES = 1_000
"""Most recorded calls one run may carry (they travel in its input, so in its history)."""
NEW_TOOL_CALL = "new tool call"
"""What the observation of a call the recording has no output for starts with (after `Error: `)."""


class ToolFixture(BaseModel):
    """One recorded tool call: the tool, the arguments it ran with, and what the model read."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tool: str = Field(min_length=1, max_length=200)
    args: dict[str, Any] = Field(default={}, description="The arguments it ran with.")
    observation: str = Field(description="The tool's output as the model read it.")
    status: Literal["ok", "error"] = Field(
        default="ok", description="error: the tool failed, and the observation says how."
    )


def new_tool_call_observation(tool: str) -> str:
    """The observation of a call the recording has no output for (it was not run)."""
    return (
        f"Error: {NEW_TOOL_CALL}: {tool} was not run. This run replays recorded tool outputs "
        "(an evaluation), and the recording has no output for this tool with these arguments."
    )
