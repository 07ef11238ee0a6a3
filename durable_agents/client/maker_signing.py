"""A server's signature on the decisions it sends (`contracts.maker_signature`).

`AgentClient` with a principal puts the principal in every decision, reply and steering
message it sends as `maker`, signed with the decision key (`runtime.decision_key`) for the run
it is addressed to; the run checks the signature before it believes the maker. A message the
client cannot sign (no key can be had, a payload the run will refuse anyway) goes unsigned: the
run records its maker as self-declared.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from durable_agents.contracts.maker_signature import (
    MESSAGE_MODELS,
    SignedMessage,
)
from durable_agents.contracts.principals import DecisionMaker
from durable_agents.runtime.decision_key import DecisionKeyError, decision_key, signature

log = logging.getLogger(__name__)


def signed_payload(
    maker: DecisionMaker, workflow_id: str, message: str, payload: dict[str, Any]
) -> dict[str, Any]:
    """`payload` of message `message` to the run `workflow_id`, by `maker` (its name as `by`)
    with the maker's signature."""
    unsigned_maker = maker.model_copy(update={"signature": None, "self_declared": False})
    payload = {**payload, "by": maker.name, "maker": unsigned_maker.model_dump(mode="json")}
    try:
        parsed = MESSAGE_MODELS[message].model_validate(payload)
        key = decision_key()
    except ValidationError:
        return payload  # the run refuses it, naming why
    except DecisionKeyError as error:
        log.warning("%s to %s sent unsigned (self-declared): %s", message, workflow_id, error)
        return payload
    signed = SignedMessage.of(workflow_id, message, parsed)
    return {**payload, "maker": {**payload["maker"], "signature": signature(key, signed)}}
