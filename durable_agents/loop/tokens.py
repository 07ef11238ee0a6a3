"""The one token estimate used everywhere: context fitting, session memory, the demo model.

It is a deterministic estimate, not a tokenizer: it runs inside workflows, where every worker
must reach the same decision on replay, and a tokenizer's data files (tiktoken loads or
downloads them) would make the decision depend on the machine.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence

from durable_agents.contracts.messages import ChatMessage

MESSAGE_OVERHEAD_TOKENS = 4


def estimate_text_tokens(text: str) -> int:
    """About 4 ASCII characters per token, 1 token per other character (CJK, emoji, ...)."""
    if text.isascii():
        return (len(text) + 3) // 4
    ascii_chars = len(text.encode("ascii", "ignore"))
    return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)


def estimate_tokens(message: ChatMessage) -> int:
    """Estimated tokens of one message, tool calls and reasoning included."""
    total = MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(message.content or "")
    for call in message.tool_calls:
        total += MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(call.name + call.arguments)
    if message.reasoning_content:
        total += estimate_text_tokens(message.reasoning_content)
    return total


def estimate_messages_tokens(messages: Iterable[ChatMessage]) -> int:
    """Estimated tokens of a conversation: the sum over its messages."""
    return sum(estimate_tokens(message) for message in messages)


class TokenTally:
    """Running totals of a growing conversation's token estimates, so that fitting it into the
    window estimates each message once per run instead of every message at every call (which
    made a long run quadratic; issue 36).

    `totals(messages)[i]` is the estimate of `messages[:i]`; `starts(messages)` lists the
    indexes where a unit may begin (every message but a tool result, which belongs to the
    assistant message that called it). Both come from the messages alone, so a replay that
    rebuilds the messages rebuilds the same totals: nothing here is worker state. The tally
    goes on from the messages it last saw while `messages` still begins with them (checked by
    identity at the first and the last of them: a run's messages only grow by appending); any
    other list makes it start over.
    """

    def __init__(self, count: Callable[[ChatMessage], int] = estimate_tokens) -> None:
        self._count = count
        self._seen: list[ChatMessage] = []
        self._totals: list[int] = [0]
        self._starts: list[int] = []

    def _follow(self, messages: Sequence[ChatMessage]) -> None:
        seen = self._seen
        if seen and (
            len(messages) < len(seen)
            or messages[0] is not seen[0]
            or messages[len(seen) - 1] is not seen[-1]
        ):
            self._seen, self._totals, self._starts = [], [0], []
        for index in range(len(self._seen), len(messages)):
            message = messages[index]
            self._seen.append(message)
            self._totals.append(self._totals[-1] + self._count(message))
            if index > 0 and message.role != "tool":
                self._starts.append(index)

    def totals(self, messages: Sequence[ChatMessage]) -> list[int]:
        """`totals[i]`: the estimated tokens of `messages[:i]` (`len(messages) + 1` numbers)."""
        self._follow(messages)
        return self._totals

    def starts(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The indexes after the first where a unit may begin, in order."""
        self._follow(messages)
        return self._starts

    def first_start(self, messages: Sequence[ChatMessage], at_least: int) -> int | None:
        """The first index where a unit may begin that is at least `at_least`, or None."""
        starts = self.starts(messages)
        where = bisect_left(starts, at_least)
        return starts[where] if where < len(starts) else None
