"""A person's update sent to a session and handed on to the session's running child turn.

Workflows cannot send updates, so the session hands `decide`, `edit_plan` and `tool_result` to
its child turn (`<session>/turn-<n>`) through the `forward_to_turn` activity, which sends the
same update to the turn and returns the turn's answer: the recorded decision, or the turn's
refusal (its message and error type). The session's history records the update and the
activity that forwarded it; the turn's records the update it took.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FORWARD_TO_TURN_ACTIVITY = "forward_to_turn"
TURN_ENDED = "TurnEnded"
"""Error type of a forward that found the turn's run already closed (it ended meanwhile)."""

ForwardedName = Literal["decide", "edit_plan", "tool_result"]


class ForwardedUpdate(BaseModel):
    """One update for the running child turn, as the session received it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workflow_id: str = Field(description="The child turn's workflow id.")
    update: ForwardedName
    update_id: str = Field(
        description="The id the turn's update gets: derived from the session's update, so a "
        "retried forward is the same update there (Temporal answers it once)."
    )
    payload: Any = Field(description="The update's input, as the session received it.")
