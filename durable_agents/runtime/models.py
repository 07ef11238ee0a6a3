"""Choose the model backend from the settings: a real OpenAI-compatible server, or the demo."""

from __future__ import annotations

from collections.abc import Mapping

from durable_agents.activities.chat_model import ChatModel
from durable_agents.activities.demo_model import DemoChatModel
from durable_agents.activities.model_router import ModelRouter
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.runtime.providers import ProviderSettings
from durable_agents.runtime.settings import DEFAULT_OPENAI_MODEL, EnvironmentSettings


def with_providers(
    default: ChatModel, providers: Mapping[str, ProviderSettings], *, streaming: bool = True
) -> ChatModel:
    """`default`, or a router that also reaches each provider by `provider/model` names."""
    if not providers:
        return default
    backends: dict[str, ChatModel] = {
        name: OpenAIChatModel(
            api_key=provider.api_key.get_secret_value() if provider.api_key else "none",
            base_url=provider.base_url,
            default_model=default.default_model,
            streaming=streaming,
            tool_calling=provider.tool_calling,
        )
        for name, provider in providers.items()
    }
    return ModelRouter(default, backends)


def chat_model_for(settings: EnvironmentSettings) -> ChatModel:
    """The worker's model backend: the demo or the configured endpoint, plus the providers."""
    return with_providers(
        default_chat_model(settings), settings.providers, streaming=settings.model_streaming
    )


def default_chat_model(settings: EnvironmentSettings) -> ChatModel:
    if settings.openai_api_key is None:
        return DemoChatModel()
    return OpenAIChatModel(
        api_key=settings.openai_api_key.get_secret_value(),
        base_url=settings.openai_base_url,
        default_model=settings.model or DEFAULT_OPENAI_MODEL,
        streaming=settings.model_streaming,
        tool_calling=settings.model_tool_calling,
    )
