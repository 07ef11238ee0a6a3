"""Plan-and-execute: the typed plan a planning call returns, how each step ended, and what a
run in that mode reports."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.omitted import none_omitted
from contracts.stop_reason import StopReason

PlanStepStatus = Literal["pending", "running", "done", "failed"]


class PlanStep(BaseModel):
    """One step of a plan: what it must achieve, and (optionally) the tools it expects."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    goal: str = Field(min_length=1, max_length=2_000, description="What this step achieves.")
    tools: list[str] | None = Field(
        default=None, description="Tools the step expects to use; unset: any of the run's."
    )


class Plan(BaseModel):
    """Steps in order. Also the input of the `edit_plan` update (with an optional `by`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: list[PlanStep] = Field(min_length=1, max_length=20)


class EditPlan(Plan):
    """Update `edit_plan`: `{"steps": [{"goal": "..."}], "by"?: "..."}` replaces the plan
    waiting for approval and approves it."""

    by: str | None = None


class StepOutcome(BaseModel):
    """How one executed step ended: its run (a child workflow) and its result."""

    index: int
    goal: str
    status: PlanStepStatus
    answer: str = ""
    workflow_id: str | None = None
    stop_reason: StopReason | None = none_omitted()
    """Why the step's run stopped (None: it failed, or was recorded before this was kept)."""


class PlanState(BaseModel):
    """The plan as it stands: its steps with their status, and every revision so far."""

    model_config = ConfigDict(frozen=True)

    steps: list[PlanStep]
    status: list[PlanStepStatus]
    outcomes: list[StepOutcome] = []
    revisions: list[Plan] = []
    replans: int = 0
    approved: bool = False
    notes: list[str] = []
    notes_dropped: int = Field(default=0, exclude_if=lambda value: not value)
    """How many of the oldest notes were dropped to keep `notes` bounded."""
    """Messages people sent while the plan ran (`steer`): every later step and the final answer
    read them."""
