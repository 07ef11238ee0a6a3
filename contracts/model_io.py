"""Input and output of the `call_model` activity."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from contracts.messages import ChatMessage, ToolCall
from contracts.usage import TokenUsage

CALL_MODEL_ACTIVITY = "call_model"
"""Activity type of the model call (the workflow schedules it by this name)."""


class ToolSchema(BaseModel):
    """What the model is told about one tool: the Chat Completions `function` definition."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]


class ModelRequest(BaseModel):
    """One model call. `model=None` means the worker's configured default model."""

    model: str | None = None
    messages: list[ChatMessage]
    tools: list[ToolSchema] = []
    tool_choice: Literal["auto", "none"] | None = None
    """`none` asks for text only (the last call at max iterations, summaries)."""
    turn: int = 1
    purpose: Literal["turn", "final_answer", "summary"] = "turn"


class ModelReply(BaseModel):
    """What the model answered: text, tool calls, or both."""

    model: str
    content: str | None = None
    tool_calls: list[ToolCall] = []
    finish_reason: str | None = None
    usage: TokenUsage = TokenUsage()
    reasoning_content: str | None = None

    def as_message(self) -> ChatMessage:
        """The assistant message to append to the conversation for this reply."""
        return ChatMessage(
            role="assistant",
            content=self.content,
            tool_calls=self.tool_calls,
            reasoning_content=self.reasoning_content,
        )
