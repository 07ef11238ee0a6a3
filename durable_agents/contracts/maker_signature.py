"""What a server's signature on a decision covers, and the activities that check and make one.

A server (`AgentClient` with a principal) signs each decision, reply and steering message it
sends: `DecisionMaker.signature` is the HMAC-SHA256, with the decision key
(`runtime.decision_key`), of `signed_text`: the id of the workflow the message is addressed to,
the message's name (`approve`, `reject`, `reply`, `decide`, `steer`) and its payload without the
signature, as canonical JSON. The payload is the message's model dumped as JSON without unset
fields, so the run that parses the message computes exactly the bytes the server signed.

The run checks a maker that claims a server (`self_declared` False) in the local activity
`check_decision_maker` (the verdict is in history; replay never reads the key), and signs what it
forwards to another run (a session's child turn, a sub-agent) with `sign_decision_makers`, so the
run that records the decision checks a message addressed to itself.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from durable_agents.contracts.approvals import (
    ApproveSignal,
    DecideUpdate,
    RejectSignal,
    ReplySignal,
)
from durable_agents.contracts.messages import SteerMessage

CHECK_MAKER_ACTIVITY = "check_decision_maker"
SIGN_MAKERS_ACTIVITY = "sign_decision_makers"

MESSAGE_MODELS: dict[str, type[BaseModel]] = {
    "approve": ApproveSignal,
    "reject": RejectSignal,
    "reply": ReplySignal,
    "decide": DecideUpdate,
    "steer": SteerMessage,
}
"""The messages a server signs, by name."""


class SignedMessage(BaseModel):
    """A message as its signature covers it: where it goes, its name and its payload (without
    the signature)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workflow_id: str = Field(min_length=1)
    message: str = Field(min_length=1, max_length=100)
    payload: dict[str, Any]

    @classmethod
    def of(cls, workflow_id: str, name: str, message: BaseModel) -> SignedMessage:
        """Message `name` (`message`, parsed) to the run `workflow_id`, as a signature covers
        it: the server that signs it, the run that checks it and the run that signs it again
        for another run build it alike."""
        return cls(workflow_id=workflow_id, message=name, payload=unsigned_payload(message))


class MakerCheck(BaseModel):
    """`check_decision_maker`'s input: a message received and the signature its maker carries."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    message: SignedMessage
    signature: str = Field(max_length=64)


class MakerVerdict(BaseModel):
    """Whether a maker's signature verified, and why not (no key on the worker, a signature
    made for another message or another run)."""

    model_config = ConfigDict(frozen=True)

    verified: bool
    reason: str | None = None


def unsigned_payload(message: BaseModel) -> dict[str, Any]:
    """`message` as its signature covers it: its JSON without unset fields, without the maker's
    signature."""
    payload = message.model_dump(mode="json", exclude_none=True)
    maker = payload.get("maker")
    if isinstance(maker, dict):
        payload["maker"] = {k: v for k, v in maker.items() if k != "signature"}
    return payload


def signed_text(message: SignedMessage) -> bytes:
    """The bytes a signature is made over: canonical JSON (sorted keys, no spaces)."""
    document = {
        "workflow_id": message.workflow_id,
        "message": message.message,
        "payload": message.payload,
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")
