"""Choose the model backend from the settings: a real OpenAI-compatible server, or the demo."""

from __future__ import annotations

from activities.chat_model import ChatModel
from activities.demo_model import DemoChatModel
from activities.openai_model import OpenAIChatModel
from runtime.settings import DEFAULT_OPENAI_MODEL, WorkerSettings


def chat_model_for(settings: WorkerSettings) -> ChatModel:
    if settings.openai_api_key is None:
        return DemoChatModel()
    return OpenAIChatModel(
        api_key=settings.openai_api_key.get_secret_value(),
        base_url=settings.openai_base_url,
        default_model=settings.model or DEFAULT_OPENAI_MODEL,
        streaming=settings.model_streaming,
    )
