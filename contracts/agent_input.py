"""The input of `AgentWorkflow`, as sent from the Temporal CLI or a client."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from contracts.approvals import TimeoutAction

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."


class AgentInput(BaseModel):
    """What to ask, which model and tools to use, and how far the loop may go.

    Unknown fields are refused so that a typo (`max_iteration`) fails loudly instead of being
    silently ignored.
    """

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(min_length=1, description="The user's request.")
    system_prompt: str = Field(default=DEFAULT_SYSTEM_PROMPT, min_length=1)
    model: str | None = Field(
        default=None, min_length=1, description="Model name; default: the worker's MODEL."
    )
    tools: list[str] | None = Field(
        default=None, description="Allowlist of tool names; default: every registered tool."
    )
    max_iterations: int = Field(default=10, ge=1, le=1000, description="Most model calls.")
    max_observation_chars: int = Field(
        default=20_000, ge=100, le=200_000, description="Longer tool results are truncated."
    )
    model_timeout_seconds: float = Field(
        default=120.0, gt=0, le=3600, description="Time limit of one model call attempt."
    )
    model_max_attempts: int = Field(
        default=5, ge=1, le=50, description="Attempts per model call before the run fails."
    )
    approval_timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        description="How long a call waits for a person (approval or reply); None: no limit.",
    )
    approval_timeout_action: TimeoutAction = Field(
        default="reject", description="On expiry: reject (default), approve, or fail the run."
    )
