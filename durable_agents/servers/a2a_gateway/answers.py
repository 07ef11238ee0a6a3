"""Reading A2A messages: a new task's request (prompt, agent, options) and the answer a person
sends to a task in `input-required`. Pure functions over plain values (no SDK objects).

A request is the message's text, with the agent profile and run options in the message's
`metadata` (`{"agent": "researcher", "options": {"max_iterations": 5}}`).

An answer decides the request the `input-required` status showed (its call id and argument
digest travel in that status message's metadata, so an approval is bound to the arguments that
were shown):
- a question: any text is the reply;
- an approval (or a plan): `approve` / `yes` / `ok` (anything after it is kept as a comment),
  or `reject` / `no`, optionally followed by the reason (`reject: too expensive`);
- or, for either, a data part: `{"decision": "approve" | "reject" | "reply", "args"?, "reason"?,
  "text"?, "comment"?}` (`args`: run the call with these arguments instead).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from durable_agents.contracts.request_kind import RequestKind
from durable_agents.loop.validation_errors import describe_validation_error
from durable_agents.servers.run_control import Answer

APPROVE_WORDS = frozenset({"approve", "approved", "yes", "y", "ok", "okay", "accept", "go"})
REJECT_WORDS = frozenset({"reject", "rejected", "no", "n", "deny", "denied", "decline"})
FIRST_WORD = re.compile(r"^\s*([A-Za-z]+)[\s:,.!-]*(.*)$", re.DOTALL)
MAX_ANSWER_CHARS = 50_000
ANSWER_HELP = (
    "answer 'approve' (or 'yes') or 'reject: <why>' (or 'no'), or send a data part "
    '{"decision": "approve" | "reject", "args"?: {...}, "reason"?: "..."}'
)


@dataclass(frozen=True)
class Shown:
    """The request an `input-required` status showed: what the next message answers."""

    call_id: str
    kind: RequestKind
    args_digest: str

    def metadata(self) -> dict[str, str]:
        return {"call_id": self.call_id, "kind": self.kind.value, "args_digest": self.args_digest}

    @classmethod
    def of_metadata(cls, metadata: Mapping[str, Any]) -> Shown | None:
        try:
            return cls(
                str(metadata["call_id"]),
                RequestKind(metadata["kind"]),
                str(metadata["args_digest"]),
            )
        except (KeyError, ValueError):
            return None


def whole_numbers(value: Any) -> Any:
    """`value` with floats that hold whole numbers turned back into ints: A2A data parts and
    metadata are protobuf `Value`s, which store every number as a double (5 -> 5.0), and the
    run settings are strict about ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


def read_answer(text: str, data: Sequence[Any], shown: Shown, by: str | None) -> Answer | str:
    """The answer to `shown` in a message's `text` and data parts, or what is wrong with it."""
    if len(text) > MAX_ANSWER_CHARS:
        return f"the answer is {len(text)} characters, more than {MAX_ANSWER_CHARS}"
    fields: dict[str, Any] = {"call_id": shown.call_id, "by": by}
    decided = next((d for d in data if isinstance(d, dict) and "decision" in d), None)
    if decided is not None:
        fields |= whole_numbers({k: v for k, v in decided.items() if k != "call_id"})
    elif shown.kind.decided_by is RequestKind.QUESTION:
        if not text.strip():
            return "the reply is empty: send the answer to the question as text"
        fields |= {"decision": "reply", "text": text}
    elif shown.kind.decided_by is RequestKind.APPROVAL:
        match = FIRST_WORD.match(text)
        word, rest = (match.group(1).lower(), match.group(2).strip()) if match else ("", "")
        if word in APPROVE_WORDS:
            fields |= {"decision": "approve", "comment": rest or None}
        elif word in REJECT_WORDS:
            fields |= {"decision": "reject", "reason": rest or None}
        else:
            return f"not understood as a decision: {ANSWER_HELP}"
    else:
        return f"{shown.call_id} waits for {shown.kind.wanted}, which cannot be sent over A2A"
    if fields.get("decision") == "approve":
        fields["args_digest"] = shown.args_digest  # approves only the arguments shown
    try:
        return Answer.model_validate(fields)
    except ValidationError as error:
        return f"invalid answer: {describe_validation_error(error)}"
