"""Chat messages in the four roles of the Chat Completions API: system, user, assistant, tool."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from durable_agents.contracts.omitted import empty_omitted, none_omitted
from durable_agents.contracts.principals import DecisionMaker

Role = Literal["system", "user", "assistant", "tool"]
ReasoningKey = Literal["reasoning_content", "reasoning"]
"""Where a provider puts a reasoning model's thinking: `reasoning_content` (DeepSeek, Qwen) or
`reasoning` (vLLM, OpenRouter)."""


class ToolCall(BaseModel):
    """One tool call as the model asked for it; `arguments` is the raw JSON text it sent.
    `provider_fields` are what the provider put on the call besides (Gemini's thought
    signature in `extra_content`), sent back verbatim with the call."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: str
    provider_fields: dict[str, Any] | None = none_omitted()


class SteerMessage(BaseModel):
    """Signal or update `steer`: `{"text": "...", "by"?: "..."}`, a user message the model
    sees at its next call, without restarting the run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1, max_length=50_000)
    by: str | None = Field(default=None, max_length=200)
    maker: DecisionMaker | None = Field(
        default=None,
        description="Set by a server: the authenticated principal who steers (`by` is its name).",
    )

    @model_validator(mode="after")
    def _signed_by_its_maker(self) -> SteerMessage:
        """A message a server signed is by its principal, whatever `by` said."""
        if self.maker is not None and self.by != self.maker.name:
            object.__setattr__(self, "by", self.maker.name)
        return self


class ChatMessage(BaseModel):
    """One message of the conversation sent to the model.

    An assistant message may carry `tool_calls`; each is answered by exactly one tool message
    whose `tool_call_id` names it. `reasoning_content` keeps what reasoning models (DeepSeek,
    Qwen, ...) sent, so it can be sent back to providers that require it on the next turn;
    `reasoning_key` is the field the provider sent it in, and the one it goes back in (unset:
    `reasoning_content`). `provider_fields` are the other fields a provider put on the
    assistant message (`thinking_blocks`, `reasoning_details`, ...), sent back verbatim
    (`activities.provider_fields`). Unset fields are left out of the JSON (`contracts.omitted`).
    """

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str | None = none_omitted()
    tool_calls: list[ToolCall] = empty_omitted()
    tool_call_id: str | None = none_omitted()
    reasoning_content: str | None = none_omitted()
    reasoning_key: ReasoningKey | None = none_omitted()
    provider_fields: dict[str, Any] | None = none_omitted()

    @classmethod
    def system(cls, text: str) -> ChatMessage:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> ChatMessage:
        return cls(role="user", content=text)

    @classmethod
    def tool_result(cls, call_id: str, text: str) -> ChatMessage:
        return cls(role="tool", tool_call_id=call_id, content=text)
