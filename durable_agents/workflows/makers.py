"""Who made a decision, as far as a run can prove it: the maker a server signed, checked.

A decision, reply or steering message may carry a `DecisionMaker`. One that claims a server
(`self_declared` False) is believed only when its signature checks out (`believed`): the local
activity `check_decision_maker` checks it with the worker's decision key, and its verdict is in
history, so replay reads the verdict and never the key. A maker that does not verify (no key on
the worker, a signature made for another message or another run, none at all) is recorded as
self-declared under the name it gave, and a warning says so. What a run forwards to another run
(a session to its child turn, a parent to a sub-agent) it signs for that run
(`countersigned`), so the run that records the decision checks a message addressed to itself.

All of it is behind the patch `VERIFIED_MAKER_PATCH`: a run recorded before believed a
server's maker as it came, and replays so.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, ValidationError

    from durable_agents.contracts.approvals import PendingRequest
    from durable_agents.contracts.maker_signature import (
        CHECK_MAKER_ACTIVITY,
        MESSAGE_MODELS,
        SIGN_MAKERS_ACTIVITY,
        MakerCheck,
        MakerVerdict,
        SignedMessage,
    )
    from durable_agents.contracts.policy import ApprovalRequirement
    from durable_agents.contracts.principals import DecisionMaker
    from durable_agents.loop import approvals

VERIFIED_MAKER_PATCH = "verified-decision-maker"
"""The patch marker of a run that checks its makers' signatures and requires a signed approver
where its policy guards a call (`loop.approvals.check_signed_approver`)."""

CHECK_TIMEOUT = timedelta(seconds=10)
CHECK_RETRY = RetryPolicy(maximum_attempts=3)

MessageT = TypeVar("MessageT", bound=BaseModel)
"""A message of `MESSAGE_MODELS` (each has a `maker` and a `by`)."""


def checks_makers() -> bool:
    """Whether this run checks makers (`VERIFIED_MAKER_PATCH`). An update's validator cannot
    ask (it records nothing): it checks, as every new run does."""
    return workflow.unsafe.is_read_only() or workflow.patched(VERIFIED_MAKER_PATCH)


def check_approver(
    request: PendingRequest,
    requirement: ApprovalRequirement | None,
    starter: str | None,
    by: str | None,
    maker: DecisionMaker | None,
) -> None:
    """Who may approve `request` under `requirement` (`DecisionRefused` if not this one): not
    the run's `starter` (the two-person rule), and, where the requirement guards the call, no
    self-declared approver (`maker` as `believed` left it) in a run that checks makers."""
    approver = approvals.signed(by, maker)["by"]
    approvals.check_two_person(request, requirement, starter, approver)
    if approvals.guards(requirement) and checks_makers():
        approvals.check_signed_approver(request, requirement, maker)


async def believed(message: MessageT, name: str) -> MessageT:
    """`message` with its maker as this run believes it: a server's that verified (recorded
    without its signature), else self-declared under the name it gave."""
    maker: DecisionMaker | None = getattr(message, "maker", None)
    if maker is None:
        return message
    if maker.self_declared:
        return _with_maker(message, maker.model_copy(update={"signature": None}))
    if not workflow.patched(VERIFIED_MAKER_PATCH):
        return message  # recorded before makers were checked: believed as then
    verdict = await _verdict(message, name, maker)
    if verdict.verified:
        return _with_maker(message, maker.model_copy(update={"signature": None}))
    workflow.logger.warning(
        "%s by %r is recorded as self-declared: %s", name, maker.name, verdict.reason
    )
    return _with_maker(message, DecisionMaker(name=maker.name, self_declared=True))


def _with_maker(message: MessageT, maker: DecisionMaker) -> MessageT:
    """`message` with `maker` (and its name as `by`, as a signed message's is)."""
    return message.model_copy(update={"maker": maker, "by": maker.name})


async def _verdict(message: BaseModel, name: str, maker: DecisionMaker) -> MakerVerdict:
    """The local activity's verdict on `maker`'s signature of `message`, addressed here."""
    if maker.signature is None:
        return MakerVerdict(verified=False, reason="it carries no signature")
    signed = SignedMessage.of(workflow.info().workflow_id, name, message)
    try:
        return await workflow.execute_local_activity(
            CHECK_MAKER_ACTIVITY,
            MakerCheck(message=signed, signature=maker.signature),
            result_type=MakerVerdict,
            start_to_close_timeout=CHECK_TIMEOUT,
            retry_policy=CHECK_RETRY,
            summary=f"check the maker of {name}",
        )
    except ActivityError as error:
        return MakerVerdict(verified=False, reason=f"the check failed: {error.cause or error}")


async def countersigned(workflow_id: str, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` (message `name`, its maker as this run believes it) for the run
    `workflow_id`: a verified maker signed for that run, so it verifies there too. A maker
    that did not verify here, or a signature that cannot be made, goes as self-declared."""
    maker = payload.get("maker")
    if not isinstance(maker, dict) or maker.get("self_declared", True):
        return payload
    if not workflow.patched(VERIFIED_MAKER_PATCH):
        return payload
    try:
        message = MESSAGE_MODELS[name].model_validate(payload)
    except (KeyError, ValidationError):
        return _self_declared(payload, maker)
    signed = SignedMessage.of(workflow_id, name, message)
    try:
        [signature] = await workflow.execute_local_activity(
            SIGN_MAKERS_ACTIVITY,
            [signed],
            result_type=list[str],
            start_to_close_timeout=CHECK_TIMEOUT,
            retry_policy=CHECK_RETRY,
            summary=f"sign {name} for {workflow_id}",
        )
    except ActivityError as error:
        workflow.logger.warning(
            "%s forwarded to %s as self-declared: %s", name, workflow_id, error.cause or error
        )
        return _self_declared(payload, maker)
    return {**payload, "maker": {**maker, "signature": signature}}


def _self_declared(payload: dict[str, Any], maker: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "maker": {"name": maker.get("name"), "self_declared": True}}
