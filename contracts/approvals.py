"""Human in the loop: pending approvals and questions, the decisions people send, and the
record of each decision kept in the result's steps.

Signals and updates are sent as JSON from the Temporal CLI or the Web UI's signal dialog, so
every model here is what that JSON must look like.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DECISION_REFUSED = "DecisionRefused"
"""Error type of a refused `decide` update (unknown or decided call, bad edited args, ...)."""

ALL_PENDING = "*"
"""`call_id` meaning every pending approval (approve/reject) or the only open question (reply)."""

WaitKind = Literal["approval", "question", "plan"]
"""`plan`: a plan waiting for approval (plan-and-execute); answered like an approval."""
TimeoutAction = Literal["reject", "approve", "fail"]
Decision = Literal["approve", "reject"]
Outcome = Literal["approved", "edited", "rejected", "answered", "timed_out"]


class PendingRequest(BaseModel):
    """A tool call waiting for a person: an approval, or an `ask_user` question."""

    kind: WaitKind
    call_id: str
    tool: str
    args: dict[str, Any]
    args_digest: str = Field(description="sha256 of the canonical JSON of `args`.")
    question: str | None = None
    requested_at: datetime
    expires_at: datetime | None = None
    on_timeout: TimeoutAction = "reject"
    command: str = Field(description="The Temporal CLI command that answers it.")


class ApproveSignal(BaseModel):
    """Signal `approve`: run the call, optionally with edited `args`; `call_id` "*" = all."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1)
    args: dict[str, Any] | None = None
    args_digest: str | None = Field(
        default=None, description="If given, must match the pending call's digest."
    )
    by: str | None = None
    comment: str | None = None


class RejectSignal(BaseModel):
    """Signal `reject`: do not run the call; the model is told why. `call_id` "*" = all."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1)
    reason: str | None = None
    by: str | None = None


class ReplySignal(BaseModel):
    """Signal `reply`: the answer to an `ask_user` question; `call_id` "*" = the only one."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1)
    text: str
    by: str | None = None


class DecideUpdate(BaseModel):
    """Update `decide`: like approve/reject, but refused at once when it cannot apply."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1)
    decision: Decision
    args: dict[str, Any] | None = None
    args_digest: str | None = None
    reason: str | None = None
    by: str | None = None
    comment: str | None = None


class HumanDecision(BaseModel):
    """What was decided about a call that waited for a person (or for its timeout)."""

    call_id: str
    kind: WaitKind
    outcome: Outcome
    by: str | None = None
    at: datetime
    comment: str | None = None
    reason: str | None = None
    reply: str | None = None
    model_args: dict[str, Any]
    executed_args: dict[str, Any] | None = None
    timeout_action: TimeoutAction | None = None
