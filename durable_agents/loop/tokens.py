"""The one token estimate used everywhere: context fitting, session memory, the demo model.

It is a deterministic estimate, not a tokenizer: it runs inside workflows, where every worker
must reach the same decision on replay, and a tokenizer's data files (tiktoken loads or
downloads them) would make the decision depend on the machine.
"""

from __future__ import annotations

from collections.abc import Iterable

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
