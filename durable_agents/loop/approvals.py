"""Human-in-the-loop decisions as pure functions: which calls wait for a person, which pending
call a decision names, whether it can apply, what it records, and what the model is told."""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypedDict

from durable_agents.contracts.agent_result import StepStatus
from durable_agents.contracts.approvals import (
    ALL_PENDING,
    ApproveSignal,
    DecideUpdate,
    HumanDecision,
    PendingRequest,
    RejectSignal,
    RepeatOf,
    ReplySignal,
    TimeoutAction,
    WaitKind,
)
from durable_agents.contracts.policy import ApprovalRequirement
from durable_agents.contracts.principals import DecisionMaker
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.loop.tool_requests import ArgsSchema, validate_args
from durable_agents.tools.definition import Tool, ToolOptions


class DecisionRefused(ValueError):
    """A decision that cannot apply (unknown or decided call, wrong kind, bad edited args)."""


TWO_PERSON_RULE = "two-person rule"
"""How a refusal by the two-person rule starts (the client's `StarterCannotApprove`)."""


class TwoPersonRule(DecisionRefused):
    """An approval by the run's starter of a call that needs another principal's."""


def args_digest(args: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of `args` (sorted keys, no spaces): binds a decision to
    exactly the arguments the reviewer saw."""
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def needs_approval(item: Tool, args: Mapping[str, Any]) -> bool:
    """Whether a call of `item` with these (validated) arguments must wait for approval."""
    rule = item.options.requires_approval
    if callable(rule):
        return bool(rule(item.args_model.model_validate(dict(args))))
    return bool(rule)


PRECHECK = "tool precheck"
"""A step's `policy` when the tool's precheck refused the call before it could wait for a
person (nobody was asked, nothing ran)."""


def precheck_refusal(item: Tool, args: Mapping[str, Any]) -> str | None:
    """Why a call of `item` with these (validated) arguments can never succeed, per the tool's
    `precheck`, or None (no precheck, or it passes).

    Raises what the precheck raises, and `TypeError` when it returns anything but None or a
    non-blank string: both are bugs in the tool, which the caller logs before asking the
    person as if there were no precheck."""
    precheck = item.options.precheck
    if precheck is None:
        return None
    reason = precheck(item.args_model.model_validate(dict(args)))
    if reason is None:
        return None
    if not isinstance(reason, str) or not reason.strip():
        raise TypeError(
            f"the precheck of {item.name} returned {reason!r}; it must return None or a reason"
        )
    return reason.strip()


def precheck_observation(tool: str, reason: str) -> str:
    """What the model reads for a call its tool's precheck refused."""
    return (
        f"Error: {reason.rstrip('.')}. The {tool} call was not run, and nobody was asked to "
        "approve it."
    )


def wait_limits(
    options: ToolOptions, run_timeout_seconds: float | None, run_action: TimeoutAction
) -> tuple[float | None, TimeoutAction]:
    """How long a call may wait for a person, and what happens then (the tool's options over
    the run's)."""
    limit = options.approval_timeout
    seconds = limit.total_seconds() if limit is not None else run_timeout_seconds
    return seconds, options.on_approval_timeout or run_action


def answer_command(workflow_id: str, kind: WaitKind, call_id: str) -> str:
    """The Temporal CLI command that approves (or, for a question, answers) one pending call."""
    kind = RequestKind(kind)
    name = kind.answer_signal
    payload: dict[str, str] = {"call_id": call_id}
    if kind.decided_by is RequestKind.QUESTION:
        payload["text"] = "..."
    return (
        f"temporal workflow signal --workflow-id {shlex.quote(workflow_id)} --name {name} "
        f"--input {shlex.quote(json.dumps(payload))}"
    )


def open_request(
    *,
    kind: WaitKind,
    workflow_id: str,
    call_id: str,
    tool: str,
    args: dict[str, Any],
    now: datetime,
    timeout_seconds: float | None,
    on_timeout: TimeoutAction,
    repeat_of: RepeatOf | None = None,
) -> PendingRequest:
    """The pending record of a call that now waits for a person (`repeat_of`: the identical
    call that already succeeded, which the person is shown)."""
    kind = RequestKind(kind)
    question = args.get("question") if kind is RequestKind.QUESTION else None
    return PendingRequest(
        kind=kind,
        call_id=call_id,
        tool=tool,
        args=args,
        args_digest=args_digest(args),
        question=question if isinstance(question, str) else None,
        requested_at=now,
        expires_at=now + timedelta(seconds=timeout_seconds) if timeout_seconds else None,
        on_timeout=on_timeout,
        command=answer_command(workflow_id, kind, call_id),
        repeat_of=repeat_of,
    )


def answers(decision: WaitKind, request: WaitKind) -> bool:
    """Whether a decision of this kind answers a request of that kind (a plan is approved or
    rejected like a tool call)."""
    return request.decided_by is decision


def select_targets(
    call_id: str, pending: Mapping[str, PendingRequest], kind: WaitKind
) -> list[PendingRequest]:
    """The pending calls a decision names; `*` is every pending approval, or the only question.

    Raises `DecisionRefused` naming what is wrong: an unknown or already-decided id, a decision
    of the wrong kind (a reply to an approval, an approval of a question), or nothing pending.
    """
    of_kind = [p for p in pending.values() if answers(kind, p.kind)]
    noun = kind.noun
    if call_id == ALL_PENDING:
        if not of_kind:  # (never kept for later: `*` decides only calls already shown)
            raise DecisionRefused(f"no {noun} is pending")
        if kind is RequestKind.QUESTION and len(of_kind) > 1:
            ids = ", ".join(p.call_id for p in of_kind)
            raise DecisionRefused(f"{len(of_kind)} questions are open ({ids}): name one")
        return of_kind
    request = pending.get(call_id)
    if request is None:
        open_ids = ", ".join(pending) or "none"
        raise DecisionRefused(
            f"no pending call {call_id!r} (unknown or already decided); pending: {open_ids}"
        )
    if not answers(kind, request.kind):
        raise DecisionRefused(
            f"call {call_id!r} is waiting for {request.kind.wanted}, not for {kind.wanted}"
        )
    return [request]


def check_edited_args(
    request: PendingRequest, args: dict[str, Any] | None, schema: ArgsSchema | None
) -> dict[str, Any] | None:
    """Validate edited arguments against the tool's schema; None when there are none."""
    if args is None:
        return None
    if schema is None:
        raise DecisionRefused(f"the arguments of {request.tool} cannot be edited here")
    validated = validate_args(schema, args)
    if isinstance(validated, str):
        raise DecisionRefused(f"edited arguments for {request.tool} are invalid: {validated}")
    return validated


def check_digest(request: PendingRequest, digest: str | None) -> None:
    """Refuse a decision made on other arguments than the ones pending."""
    if digest is not None and digest != request.args_digest:
        raise DecisionRefused(
            f"args_digest does not match call {request.call_id!r}: the decision was made on "
            "other arguments"
        )


class Signed(TypedDict):
    """A decision's `by` and `maker`, as `HumanDecision` records them."""

    by: str | None
    maker: DecisionMaker | None


def signed(by: str | None, maker: DecisionMaker | None) -> Signed:
    """Who made a decision: its maker (`maker`, as the run believes it: `workflows.makers`;
    its name is the `by`, whatever the sender typed), else the `by` the sender named,
    self-declared (the Temporal CLI, a plain signal), else nobody."""
    if maker is not None:
        return {"by": maker.name, "maker": maker}
    if by:
        return {"by": by, "maker": DecisionMaker(name=by, self_declared=True)}
    return {"by": None, "maker": None}


def check_two_person(
    request: PendingRequest,
    requirement: ApprovalRequirement | None,
    starter: str | None,
    approver: str | None,
) -> None:
    """Refuse an approval of a call the two-person rule guards (`requirement.
    distinct_from_starter`) by the principal who started the run: the call keeps waiting for
    someone else."""
    if requirement is None or not requirement.distinct_from_starter or starter is None:
        return
    if approver == starter:
        raise TwoPersonRule(
            f"{TWO_PERSON_RULE}: {approver!r} started this run and cannot approve call "
            f"{request.call_id!r} ({request.tool}); another principal must approve it"
        )


SIGNED_APPROVER = "signed approver"
"""How a refusal of a self-declared approver starts."""


def guards(requirement: ApprovalRequirement | None) -> bool:
    """Whether `requirement` says who may approve (the two-person rule, a role): then only an
    approver a server signed can."""
    return requirement is not None and (
        requirement.distinct_from_starter or requirement.role is not None
    )


def check_signed_approver(
    request: PendingRequest, requirement: ApprovalRequirement | None, maker: DecisionMaker | None
) -> None:
    """Refuse a self-declared approval (a plain signal's `by`, a maker whose signature did not
    verify) of a call whose policy says who may approve it: nothing proves who that is, so
    neither the two-person rule nor a role could be met. The call keeps waiting."""
    if not guards(requirement) or (maker is not None and not maker.self_declared):
        return
    raise DecisionRefused(
        f"{SIGNED_APPROVER}: call {request.call_id!r} ({request.tool}) needs an approver a "
        "server signed (its policy says who may approve it); a `by` sent with the Temporal "
        "CLI or a plain signal is self-declared"
    )


def approved(
    request: PendingRequest,
    *,
    now: datetime,
    edited_args: dict[str, Any] | None,
    by: str | None,
    comment: str | None,
    digest: str | None = None,
    maker: DecisionMaker | None = None,
) -> HumanDecision:
    """The approval of `request` (an edit when `edited_args` differ), recording the digest it
    named (`check_digest` checked it), or that it named none."""
    edited = edited_args is not None and edited_args != request.args
    return HumanDecision(
        call_id=request.call_id,
        kind=request.kind,
        outcome="edited" if edited else "approved",
        **signed(by, maker),
        at=now,
        comment=comment,
        model_args=request.args,
        executed_args=edited_args if edited_args is not None else request.args,
        args_digest=digest,
    )


def rejected(
    request: PendingRequest,
    *,
    now: datetime,
    reason: str | None,
    by: str | None,
    maker: DecisionMaker | None = None,
) -> HumanDecision:
    return HumanDecision(
        call_id=request.call_id,
        kind=request.kind,
        outcome="rejected",
        **signed(by, maker),
        at=now,
        reason=reason,
        model_args=request.args,
    )


def answered(
    request: PendingRequest,
    *,
    now: datetime,
    text: str,
    by: str | None,
    maker: DecisionMaker | None = None,
) -> HumanDecision:
    return HumanDecision(
        call_id=request.call_id,
        kind="question",
        outcome="answered",
        **signed(by, maker),
        at=now,
        reply=text,
        model_args=request.args,
    )


def timed_out(request: PendingRequest, *, now: datetime) -> HumanDecision:
    """Nobody decided in time: the request's `on_timeout` action, recorded as a timeout."""
    runs = request.kind.runs_on_approval and request.on_timeout == "approve"
    return HumanDecision(
        call_id=request.call_id,
        kind=request.kind,
        outcome="timed_out",
        at=now,
        model_args=request.args,
        executed_args=request.args if runs else None,
        timeout_action=request.on_timeout,
    )


def should_run(decision: HumanDecision) -> bool:
    """Whether the tool runs (or the plan is carried out) after this decision: approved,
    edited, or approved on timeout."""
    return decision.kind.runs_on_approval and decision.executed_args is not None


def declined_status(decision: HumanDecision) -> StepStatus:
    """The step status of a call a person's decision does not run (`should_run` is False): a
    rejection is `rejected`, a wait that timed out into `reject` or `fail` an `error`."""
    if decision.outcome == "rejected":
        return "rejected"
    if decision.outcome == "timed_out" and decision.timeout_action != "approve":
        return "error"
    return "ok"


def waited_seconds(request: PendingRequest) -> float:
    if request.expires_at is None:
        return 0.0
    return (request.expires_at - request.requested_at).total_seconds()


def decision_observation(request: PendingRequest, decision: HumanDecision) -> str:
    """What the model reads for a call that did not run, or for a question."""
    if decision.outcome == "answered":
        return decision.reply or ""
    if decision.outcome == "rejected":
        who = decision.by or "the reviewer"
        why = decision.reason or "no reason given"
        return (
            f"Rejected by {who}: {why}. The {request.tool} call was not run; "
            "find another way or answer without it."
        )
    seconds = f"{waited_seconds(request):g}s"
    if not request.kind.runs_on_approval:
        if decision.timeout_action == "approve":
            return f"The user did not reply within {seconds}; continue without their answer."
        return f"Error: no reply from the user within {seconds}."
    return (
        f"Error: the approval request for {request.tool} timed out after {seconds} with no "
        "decision; the call was not run."
    )


def edited_note(decision: HumanDecision) -> str | None:
    """The note that tells the model a reviewer changed its arguments before the tool ran."""
    if decision.outcome != "edited":
        return None
    return (
        "Note: a reviewer changed the arguments before running the tool; it ran with "
        f"{json.dumps(decision.executed_args, ensure_ascii=False, sort_keys=True)} instead of "
        f"{json.dumps(decision.model_args, ensure_ascii=False, sort_keys=True)}."
    )


def as_signal(update: DecideUpdate) -> ApproveSignal | RejectSignal:
    """The signal that makes the same decision as a `decide` update."""
    if update.decision == "approve":
        return ApproveSignal(
            call_id=update.call_id,
            args=update.args,
            args_digest=update.args_digest,
            by=update.by,
            maker=update.maker,
            comment=update.comment,
        )
    return RejectSignal(
        call_id=update.call_id, reason=update.reason, by=update.by, maker=update.maker
    )


def as_shown(reported: Sequence[PendingRequest]) -> list[PendingRequest]:
    """Requests another run reported (a sub-agent's, a child turn's), bound by the digest of
    the arguments they show, computed here: a report that gave other arguments the digest of
    the real call cannot borrow its approval."""
    return [r.model_copy(update={"args_digest": args_digest(r.args)}) for r in reported]


def bound_approvals(
    payload: Mapping[str, Any], shown: Sequence[tuple[str, str]]
) -> list[dict[str, Any]] | None:
    """An approval forwarded to another run, bound to what is shown here: one approval per
    shown call it names (`shown`: its call id there and the digest shown here), so the other run
    refuses one whose real call differs. None when `*` carries edited arguments and more than
    one call is shown: edited arguments name one call."""
    if payload.get("call_id") == ALL_PENDING and payload.get("args") is not None and len(shown) > 1:
        return None
    return [{**payload, "call_id": call_id, "args_digest": digest} for call_id, digest in shown]


EarlySignal = ApproveSignal | RejectSignal | ReplySignal
"""A decision signal that named a call before that call was pending (see `keep_early`)."""

MAX_EARLY_DECISIONS = 20
"""Most decisions a run keeps for calls not pending yet; the oldest goes first."""


def is_early(
    call_id: str, pending: Mapping[str, PendingRequest], decided: Mapping[str, HumanDecision]
) -> bool:
    """Whether a decision naming `call_id` is kept for later: it names one call (not `*`) that
    is neither pending nor decided.

    The race it answers: a worker that dies just after a model reply may already have answered
    `pending_approvals` from the workflow task it never committed; the next worker replays and
    gets the person's signal and the reply in one workflow task, and the SDK applies the signal
    first, when nothing is pending yet. A decision is kept only when it names its call: `*`
    decides the calls pending when it arrives, never calls the person has not seen."""
    return call_id != ALL_PENDING and call_id not in pending and call_id not in decided


def keep_early(
    early: Mapping[str, EarlySignal], signal: EarlySignal, limit: int = MAX_EARLY_DECISIONS
) -> dict[str, EarlySignal]:
    """`early` with `signal` kept under its call id (a newer decision for the same call replaces
    the older one), at most `limit` entries: the oldest are dropped."""
    kept = {call_id: s for call_id, s in early.items() if call_id != signal.call_id}
    kept[signal.call_id] = signal
    while len(kept) > limit:
        kept.pop(next(iter(kept)))
    return kept
