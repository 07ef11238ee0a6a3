"""Token usage reported by model calls."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from durable_agents.contracts.omitted import false_omitted


class TokenUsage(BaseModel):
    """Tokens spent; adding two usages sums them field by field.

    `estimated` marks counts the provider did not report (its reply had no usage): they come
    from `loop.tokens`' estimate instead. A sum is estimated if any part of it is. The flag is
    left out of the JSON while it is false, so exact usage serializes as it always did.
    """

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    estimated: bool = false_omitted()

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            estimated=self.estimated or other.estimated,
        )
