"""`KeptOutputs`: the tool outputs a worker keeps for the run's next model call, so history holds
each output once.

A tool's output is recorded in history as its activity's result. Sent to the model in the next
call's context delta as well, it would be recorded twice: for a 2,000-character output, two
thirds of what a model call adds to history. A worker keeps the outputs of the calls it runs
(`keep`), and says so in the call's result (`ToolOutput.kept_by`, its name); when the same
worker holds the run's conversation (it answered the last model call: its queue with cache
affinity, `ModelReply.answered_by` without), the next delta names the kept output instead of
carrying it (`ContextDelta.kept`), and the worker puts it back (`fill`) and forgets it: from
then on the context cache holds it, as part of the conversation.

Like the context cache, this is an optimisation, never the source of truth: the delta's digest
is of the whole message, so an output this worker no longer has (evicted, restarted) or has
otherwise is a miss, and the workflow sends the whole conversation (a retried call that this
worker already applied needs nothing: the context cache holds what it made). Bounded by entries
and characters, least recently kept first out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence

from durable_agents.contracts.messages import ChatMessage

KEEP_MIN_CHARS = 512
"""Shorter outputs go in the delta as they are: a reference and the result's `kept_by` cost
about 100 bytes."""


class KeptOutputs:
    """Tool outputs by the call's idempotency key (unique to a run's call)."""

    def __init__(self, max_outputs: int = 5_000, max_chars: int = 20_000_000) -> None:
        self._outputs: OrderedDict[str, str] = OrderedDict()
        self._chars = 0
        self._max_outputs = max_outputs
        self._max_chars = max_chars

    def keep(self, ref: str, content: str) -> bool:
        """Keep `content` under `ref`; whether it is kept (long enough to be worth it)."""
        if len(content) < KEEP_MIN_CHARS or len(content) > self._max_chars:
            return False
        old = self._outputs.pop(ref, None)
        self._chars -= len(old) if old is not None else 0
        self._outputs[ref] = content
        self._chars += len(content)
        while len(self._outputs) > self._max_outputs or self._chars > self._max_chars:
            _, dropped = self._outputs.popitem(last=False)
            self._chars -= len(dropped)
        return True

    def fill(
        self, messages: Sequence[ChatMessage], kept: Mapping[int, str]
    ) -> list[ChatMessage] | None:
        """`messages` with the content of each `kept` one (index → ref) put back, and those
        outputs forgotten; None (nothing forgotten) when this worker lacks one of them."""
        filled = list(messages)
        for index, ref in kept.items():
            content = self._outputs.get(ref)
            if content is None or not 0 <= index < len(filled):
                return None
            filled[index] = filled[index].model_copy(update={"content": content})
        for ref in kept.values():
            self._chars -= len(self._outputs.pop(ref, ""))
        return filled

    def __len__(self) -> int:
        return len(self._outputs)
