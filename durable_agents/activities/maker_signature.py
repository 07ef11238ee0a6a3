"""`check_decision_maker` and `sign_decision_makers`: the worker's side of signed decisions.

Thin adapters over `runtime.decision_key`, run as local activities by the workflow
(`workflows.makers`): the verdict and the signatures are in history, so replay never reads the
key, and a worker whose key changed since replays what its run recorded. The key itself never
leaves this process: not in the activities' results, not in their logs.
"""

from __future__ import annotations

from temporalio import activity

from durable_agents.contracts.maker_signature import (
    CHECK_MAKER_ACTIVITY,
    SIGN_MAKERS_ACTIVITY,
    MakerCheck,
    MakerVerdict,
    SignedMessage,
)
from durable_agents.runtime.decision_key import (
    DecisionKeyError,
    decision_key,
    signature,
    signature_matches,
)


@activity.defn(name=CHECK_MAKER_ACTIVITY)
async def check_decision_maker(check: MakerCheck) -> MakerVerdict:
    """Whether the maker's signature was made with this worker's key for this message."""
    try:
        key = decision_key()
    except DecisionKeyError as error:
        return MakerVerdict(verified=False, reason=f"this worker has no decision key: {error}")
    if signature_matches(key, check.message, check.signature):
        return MakerVerdict(verified=True)
    return MakerVerdict(
        verified=False,
        reason="the signature was not made with this worker's decision key for this message "
        "to this run",
    )


@activity.defn(name=SIGN_MAKERS_ACTIVITY)
async def sign_decision_makers(messages: list[SignedMessage]) -> list[str]:
    """The signature of each message (what a run forwards to another: a verified maker stays
    verified there). An error when the worker has no key: the run forwards them unsigned."""
    key = decision_key()
    return [signature(key, message) for message in messages]
