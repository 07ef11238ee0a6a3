"""The interface every model backend implements: one chat completion with tools."""

from __future__ import annotations

from typing import Protocol

from durable_agents.contracts.model_io import ModelReply, ModelRequest


class ChatModel(Protocol):
    """Answers one `ModelRequest`; raises `temporalio.exceptions.ApplicationError` on failure."""

    default_model: str

    async def complete(self, request: ModelRequest) -> ModelReply: ...
