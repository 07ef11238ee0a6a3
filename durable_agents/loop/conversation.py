"""Build and grow the message list the model sees."""

from __future__ import annotations

from collections.abc import Sequence

from durable_agents.contracts.agent_input import AgentInput
from durable_agents.contracts.messages import ChatMessage


def start_conversation(params: AgentInput) -> list[ChatMessage]:
    """The first messages of a run: the system prompt, earlier turns, then the user's prompt
    (at index `1 + len(params.history)`)."""
    return [
        ChatMessage.system(params.system_prompt),
        *params.history,
        ChatMessage.user(params.prompt),
    ]


def append_round(
    messages: Sequence[ChatMessage],
    assistant: ChatMessage,
    observations: Sequence[tuple[str, str]],
) -> list[ChatMessage]:
    """Append one assistant message carrying all its tool calls, then one tool message per call.

    `observations` is `(call_id, text)` pairs; they are written in the order the model asked for
    the calls, whatever order they finished in, and every call gets exactly one answer (providers
    reject an assistant tool call without its tool message).
    """
    by_id = dict(observations)
    missing = [c.id for c in assistant.tool_calls if c.id not in by_id]
    if missing:
        raise ValueError(f"no observation for tool call(s) {missing}")
    tool_messages = [ChatMessage.tool_result(c.id, by_id[c.id]) for c in assistant.tool_calls]
    return [*messages, assistant, *tool_messages]
