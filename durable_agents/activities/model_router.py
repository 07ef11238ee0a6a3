"""Model names that carry a provider: `ollama/qwen2.5`, `deepseek/deepseek-chat`.

The worker knows each provider's endpoint and key (settings `MODEL_PROVIDERS` or
`MODEL_PROVIDERS_FILE`); a run only names the model, so keys never enter workflow input or
history. A name whose prefix is not a known provider (`meta-llama/Llama-3.1-8B`) goes to the
default endpoint as it is. The answering model is reported with its provider prefix, so records
and price tables name it the way the run did.
"""

from __future__ import annotations

from collections.abc import Mapping

from durable_agents.activities.chat_model import ChatModel
from durable_agents.contracts.model_io import ModelReply, ModelRequest


def split_provider(name: str, providers: Mapping[str, object]) -> tuple[str | None, str]:
    """`(provider, model)` for `provider/model` with a known provider, else `(None, name)`."""
    provider, slash, model = name.partition("/")
    if slash and model and provider in providers:
        return provider, model
    return None, name


class ModelRouter:
    """A `ChatModel` that sends each request to its provider's backend, or the default one."""

    def __init__(self, default: ChatModel, providers: Mapping[str, ChatModel]) -> None:
        self._default = default
        self._providers = dict(providers)
        self.default_model = default.default_model

    @property
    def providers(self) -> list[str]:
        return list(self._providers)

    async def complete(self, request: ModelRequest) -> ModelReply:
        provider, model = split_provider(request.model or self.default_model, self._providers)
        if provider is None:
            return await self._default.complete(request)
        reply = await self._providers[provider].complete(
            request.model_copy(update={"model": model})
        )
        if reply.model.startswith(f"{provider}/"):
            return reply
        return reply.model_copy(update={"model": f"{provider}/{reply.model or model}"})

    async def close(self) -> None:
        for backend in [self._default, *self._providers.values()]:
            close = getattr(backend, "close", None)
            if close is not None:
                await close()
