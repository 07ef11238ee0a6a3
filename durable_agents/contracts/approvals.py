"""Human in the loop: pending approvals and questions, the decisions people send, and the
record of each decision kept in the result's steps.

Signals and updates are sent as JSON from the Temporal CLI or the Web UI's signal dialog, so
every model here is what that JSON must look like.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from durable_agents.contracts.omitted import none_omitted
from durable_agents.contracts.policy import ApprovalRequirement
from durable_agents.contracts.principals import DecisionMaker
from durable_agents.contracts.request_kind import RequestKind

DECISION_REFUSED = "DecisionRefused"
"""Error type of a refused `decide` update (unknown or decided call, bad edited args, ...)."""

ALL_PENDING = "*"
"""`call_id` meaning every pending approval (approve/reject) or the only open question (reply)."""

WaitKind = RequestKind
"""The kind of a pending request (`contracts.request_kind.RequestKind`)."""
TimeoutAction = Literal["reject", "approve", "fail"]
Decision = Literal["approve", "reject"]
Outcome = Literal["approved", "edited", "rejected", "answered", "timed_out"]


MAX_EDITED_ARGS_BYTES = 64 * 1024
"""Largest edited arguments a person may send (as compact JSON): they are kept in the call's
step, which the `status` query and the run's result show."""
MAX_NOTE_CHARS = 10_000
"""Longest comment or reason a person may attach to a decision."""
MAX_REPLY_CHARS = 50_000
"""Longest answer to an `ask_user` question."""


def _bounded_args(args: dict[str, Any] | None) -> dict[str, Any] | None:
    if args is not None:
        size = len(json.dumps(args, separators=(",", ":"), ensure_ascii=False).encode())
        if size > MAX_EDITED_ARGS_BYTES:
            raise ValueError(
                f"the edited arguments have {size} bytes as JSON; the most is "
                f"{MAX_EDITED_ARGS_BYTES}"
            )
    return args


EditedArgs = Annotated[dict[str, Any] | None, AfterValidator(_bounded_args)]
Who = Annotated[str | None, Field(max_length=200)]
Note = Annotated[str | None, Field(max_length=MAX_NOTE_CHARS)]
Maker = Annotated[
    DecisionMaker | None,
    Field(
        default=None,
        description="Set by a server (`AgentClient` with a principal): the authenticated "
        "principal who decides, signed for this run; `by` is then that principal's name, "
        "whatever the body said. Unset (the Temporal CLI, a plain signal), or a maker whose "
        "signature does not verify: self-declared.",
    ),
]


class RepeatOf(BaseModel):
    """An identical call (same tool, same canonical arguments) that already ran and succeeded
    in this run: a call waiting for approval that names one would do the same thing again."""

    model_config = ConfigDict(frozen=True)

    call_id: str = Field(description="The latest identical call that succeeded.")
    times: int = Field(ge=1, description="How many identical calls succeeded so far.")
    result: str | None = none_omitted(description="What the latest one returned (shortened).")


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
    repeat_of: RepeatOf | None = none_omitted(
        description="Set when an identical call already ran and succeeded in this run: "
        "approving runs it again (`loop.repetition.screen_repeat`)."
    )
    approval: ApprovalRequirement | None = none_omitted(
        description="Who may approve it, when the run's approval policy says (the two-person "
        "rule, the role that approves)."
    )


class ApproveSignal(BaseModel):
    """Signal `approve`: run the call, optionally with edited `args`; `call_id` "*" = all."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=500)
    args: EditedArgs = None
    args_digest: str | None = Field(
        default=None, max_length=100, description="If given, must match the pending call's digest."
    )
    by: Who = None
    maker: Maker = None
    comment: Note = None


class RejectSignal(BaseModel):
    """Signal `reject`: do not run the call; the model is told why. `call_id` "*" = all."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=500)
    reason: Note = None
    by: Who = None
    maker: Maker = None


class ReplySignal(BaseModel):
    """Signal `reply`: the answer to an `ask_user` question; `call_id` "*" = the only one."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=500)
    text: str = Field(max_length=MAX_REPLY_CHARS)
    by: Who = None
    maker: Maker = None


class DecideUpdate(BaseModel):
    """Update `decide`: like approve/reject, but refused at once when it cannot apply."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=500)
    decision: Decision
    args: EditedArgs = None
    args_digest: str | None = Field(default=None, max_length=100)
    reason: Note = None
    by: Who = None
    maker: Maker = None
    comment: Note = None


class HumanDecision(BaseModel):
    """What was decided about a call that waited for a person (or for its timeout)."""

    call_id: str
    kind: WaitKind
    outcome: Outcome
    by: str | None = None
    maker: DecisionMaker | None = none_omitted(
        description="Who decided: the authenticated principal a server signed, checked by the "
        "run (`self_declared` False; recorded without its signature), or the name a plain "
        "signal gave (`self_declared` True)."
    )
    at: datetime
    comment: str | None = None
    reason: str | None = None
    reply: str | None = None
    model_args: dict[str, Any]
    executed_args: dict[str, Any] | None = None
    timeout_action: TimeoutAction | None = None
    args_digest: str | None = Field(
        default=None,
        description="An approval: the args_digest it named, checked against the call's "
        "arguments (the HTTP API, MCP and A2A require one). None: it named none (the Temporal "
        "CLI, a signal), so it approved whatever arguments the call had when it applied.",
    )
