"""Token usage reported by model calls."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from durable_agents.contracts.omitted import default_omitted, false_omitted


class TokenUsage(BaseModel):
    """Tokens spent; adding two usages sums them field by field.

    `estimated` marks counts the provider did not report (its reply had no usage): they come
    from `loop.tokens`' estimate instead. A sum is estimated if any part of it is. The flag is
    left out of the JSON while it is false, so exact usage serializes as it always did.

    `cached_prompt_tokens` is the part of `prompt_tokens` the provider served from its prompt
    cache (a prefix it had already read): OpenAI's `usage.prompt_tokens_details.cached_tokens`,
    llama-server's `timings.cache_n`. 0 when the provider says nothing; left out of the JSON
    while 0, so usage recorded before it existed reads back the same.
    """

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    estimated: bool = false_omitted()
    cached_prompt_tokens: int = default_omitted(0)

    @property
    def cache_share(self) -> float | None:
        """The share of prompt tokens served from the provider's prompt cache (None: no prompt
        tokens)."""
        return self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else None

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            estimated=self.estimated or other.estimated,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
        )
