"""The working state of one agent run (n8n's scratchpad): everything the loop needs to go on.

It lives in workflow memory, rebuilt from history on replay; it is a pydantic model so a run
can carry it across continue-as-new.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

from durable_agents.contracts.agent_result import ModelCall, ToolStep
from durable_agents.contracts.approvals import RepeatOf
from durable_agents.contracts.messages import ChatMessage, SteerMessage
from durable_agents.contracts.plan import PlanState
from durable_agents.contracts.usage import TokenUsage


class RepetitionState(BaseModel):
    """What the run has done so far, by call key (`tool:digest`) and error key (`tool:text`),
    for repeated-action detection (see `loop.repetition`)."""

    model_config = ConfigDict(frozen=True)

    calls: dict[str, int] = {}
    last_observation: dict[str, str] = {}
    errors: dict[str, int] = {}
    warned: list[str] = []
    succeeded: dict[str, RepeatOf] = {}
    """Calls that ran and succeeded, by call key: a call waiting for approval identical to one
    is a repeat (`loop.repetition.screen_repeat`)."""


class Scratchpad(BaseModel):
    """Messages so far, steps, spending, and the loop's counters.

    Frozen: the loop replaces it with the next one (`loop.progress`), never changes it in place.
    """

    model_config = ConfigDict(frozen=True)

    messages: list[ChatMessage]
    steps: list[ToolStep] = []
    steps_omitted: int = 0
    """Earliest steps left out to keep the payload bounded (see `loop.continuation`)."""
    model_calls: list[ModelCall] = []
    usage: TokenUsage = TokenUsage()
    cost_usd: float | None = None
    iteration: int = 0
    model: str = ""
    nudged_empty: bool = False
    repetition: RepetitionState = RepetitionState()
    prompt_index: int = 1
    """Where the prompt sits in `messages` (after earlier conversation turns)."""
    summary: str | None = None
    summarized_upto: int = 1
    """Messages before this index (the prompt excepted) are covered by `summary`."""
    compacted: int = 0
    """Messages removed when the run was carried across continue-as-new (never sent again)."""
    output_retries_used: int = 0
    """Invalid typed answers so far (see `loop.output`)."""
    output_errors: list[str] = []
    """Why the last invalid typed answer was invalid."""
    steering: list[SteerMessage] = []
    plan: PlanState | None = None
    """Plan-and-execute mode: the plan as it stands."""
    _token_tally: Any = PrivateAttr(default=None)
    """The messages' running token estimates (`loop.tokens.TokenTally`, made on first use by
    `loop.context_plan.token_tally`): never serialised, and shared with every scratchpad
    `model_copy` makes from this one, so a run estimates each message once. Derived from the
    messages alone: a replay rebuilds it the same."""
    """Steering messages received and not yet seen by the model (sent at its next call)."""
