"""A `ChatModel` for any OpenAI-compatible Chat Completions server (OpenAI, Ollama, vLLM,
DeepSeek, LM Studio, ...), through the official `openai` async client."""

from __future__ import annotations

from typing import Any

import openai
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError

from activities.model_errors import to_application_error
from contracts.errors import MODEL_UNAVAILABLE
from contracts.messages import ChatMessage, ToolCall
from contracts.model_io import ModelReply, ModelRequest, ToolSchema
from contracts.usage import TokenUsage


def message_to_wire(message: ChatMessage) -> dict[str, Any]:
    """One message as the Chat Completions API expects it."""
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    if message.reasoning_content:
        # Only present when the provider sent it: such providers want it back.
        wire["reasoning_content"] = message.reasoning_content
    return wire


def tool_to_wire(schema: ToolSchema) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": schema.name,
            "description": schema.description,
            "parameters": schema.parameters,
        },
    }


def reply_from_completion(completion: Any, fallback_model: str) -> ModelReply:
    """Read the first choice of a `ChatCompletion` into a `ModelReply`."""
    if not completion.choices:
        raise ApplicationError("the model provider returned no choices", type=MODEL_UNAVAILABLE)
    choice = completion.choices[0]
    message = choice.message
    calls = [
        ToolCall(
            id=call.id or "",
            name=call.function.name or "",
            arguments=call.function.arguments or "",
        )
        for call in (message.tool_calls or [])
        if getattr(call, "function", None) is not None
    ]
    extra = message.model_extra or {}
    reasoning = extra.get("reasoning_content") or extra.get("reasoning")
    usage = completion.usage
    return ModelReply(
        model=completion.model or fallback_model,
        content=message.content,
        tool_calls=calls,
        finish_reason=choice.finish_reason,
        usage=TokenUsage(
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            total_tokens=usage.total_tokens if usage else 0,
        ),
        reasoning_content=reasoning if isinstance(reasoning, str) else None,
    )


class OpenAIChatModel:
    """Chat Completions with native tool calling; Temporal, not the client, retries."""

    def __init__(
        self,
        *,
        api_key: str,
        default_model: str,
        base_url: str | None = None,
        request_timeout_seconds: float = 300.0,
    ) -> None:
        self.default_model = default_model
        self._api_key = api_key
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=request_timeout_seconds,
        )

    async def complete(self, request: ModelRequest) -> ModelReply:
        model = request.model or self.default_model
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": [message_to_wire(m) for m in request.messages],
        }
        if request.tools:
            kwargs["tools"] = [tool_to_wire(t) for t in request.tools]
            if request.tool_choice is not None:
                kwargs["tool_choice"] = request.tool_choice
        try:
            completion = await self._client.chat.completions.create(**kwargs)
        except (openai.OpenAIError, ValueError) as error:
            raise to_application_error(error, self._api_key) from None
        try:
            return reply_from_completion(completion, model)
        except (AttributeError, TypeError, IndexError, ValidationError) as error:
            # A 200 whose body is not a chat completion (a proxy's HTML page, a bare string,
            # a choice without a message): as unusable as a malformed body, and as retryable.
            raise to_application_error(error, self._api_key) from None

    async def close(self) -> None:
        await self._client.close()
