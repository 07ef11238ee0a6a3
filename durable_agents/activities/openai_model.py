"""A `ChatModel` for any OpenAI-compatible Chat Completions server (OpenAI, Ollama, vLLM,
DeepSeek, LM Studio, ...), through the official `openai` async client.

It streams when it can (`stream=True` with `stream_options.include_usage`), assembling the chunks
into the reply a plain request would have given (`activities/streaming.py`) and showing the text
received so far in the activity's heartbeat details. An endpoint that refuses streaming gets a
plain request instead, and no streaming requests for the rest of the worker's life.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError

from durable_agents.activities.model_errors import register_secret, scrub, to_application_error
from durable_agents.activities.model_progress import watch_progress
from durable_agents.activities.prompted_tools import (
    ToolCalling,
    prompted_messages,
    with_calls_written_as_text,
    with_prompted_calls,
)
from durable_agents.activities.provider_fields import provider_fields
from durable_agents.activities.streaming import (
    StreamAssembler,
    StreamIncomplete,
    arguments_text,
    estimate_usage,
    reasoning_of,
    usage_from,
)
from durable_agents.contracts.errors import MODEL_UNAVAILABLE
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelReply, ModelRequest, ToolSchema

logger = logging.getLogger(__name__)

STREAMING_WORDS = re.compile(r"\bstream", re.IGNORECASE)
"""How a provider's error names streaming (`stream`, `stream_options`, `streaming`,
`stream_not_supported`; not `upstream`)."""


def message_to_wire(message: ChatMessage) -> dict[str, Any]:
    """One message as the Chat Completions API expects it. What the provider put on the message
    or a tool call besides (`provider_fields`: thought signatures, thinking blocks) goes back as
    it came; the fields this project writes itself take precedence."""
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                **(call.provider_fields or {}),
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    if message.reasoning_content:
        # Only present when the provider sent it: such providers want it back, under the key
        # they used (`reasoning_content` for DeepSeek and Qwen, `reasoning` for vLLM, ...).
        wire[message.reasoning_key or "reasoning_content"] = message.reasoning_content
    for key, value in (message.provider_fields or {}).items():
        wire.setdefault(key, value)
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


def reply_from_completion(
    completion: Any, fallback_model: str, prompt: Sequence[ChatMessage] = ()
) -> ModelReply:
    """Read the first choice of a `ChatCompletion` into a `ModelReply`. A completion without
    usage gets an estimate (from `prompt` and the reply), flagged `estimated`."""
    if not completion.choices:
        raise ApplicationError("the model provider returned no choices", type=MODEL_UNAVAILABLE)
    choice = completion.choices[0]
    message = choice.message
    calls = [
        ToolCall(
            id=call.id or "",
            name=call.function.name or "",
            arguments=arguments_text(call.function.arguments),
            provider_fields=provider_fields(call) or None,
        )
        for call in (message.tool_calls or [])
        if getattr(call, "function", None) is not None
    ]
    reasoning = reasoning_of(message)
    reply = ModelReply(
        model=completion.model or fallback_model,
        content=message.content,
        tool_calls=calls,
        finish_reason=choice.finish_reason,
        reasoning_content=reasoning[1] if reasoning else None,
        reasoning_key=reasoning[0] if reasoning else None,
        provider_fields=provider_fields(message) or None,
    )
    usage = usage_from(completion.usage, getattr(completion, "timings", None))
    return reply.model_copy(
        update={"usage": usage if usage is not None else estimate_usage(prompt, reply)}
    )


class StreamingRefused(Exception):
    """The streaming request failed in a way a plain request might not."""

    def __init__(self, error: Exception, *, about_streaming: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.about_streaming = about_streaming
        """The provider said so (its message names `stream`): remember it even if the plain
        request fails too."""


def mentions_streaming(error: openai.APIStatusError) -> bool:
    """The provider's error names `stream`, `stream_options` or streaming."""
    return STREAMING_WORDS.search(f"{error.message} {error.body}") is not None


def refuses_streaming(error: openai.APIStatusError) -> bool:
    """Whether the streaming request was refused for streaming: a 4xx (not 429) whose message
    names `stream` or `stream_options`, or 501 Not Implemented. Any other 4xx is about the
    request itself (a context too long, a bad schema) and fails at once, with one request."""
    status = error.status_code
    return status == 501 or (400 <= status < 500 and status != 429 and mentions_streaming(error))


def is_event_stream(response: Any) -> bool:
    content_type = str(response.headers.get("content-type", "")).lower()
    return "text/event-stream" in content_type


class OpenAIChatModel:
    """Chat Completions with native tool calling; Temporal, not the client, retries."""

    def __init__(
        self,
        *,
        api_key: str,
        default_model: str,
        base_url: str | None = None,
        request_timeout_seconds: float = 300.0,
        streaming: bool = True,
        tool_calling: ToolCalling = "native",
    ) -> None:
        self.default_model = default_model
        self.tool_calling = tool_calling
        """`native`: tools in the API's `tools` field; `prompted`: described in the prompt and
        read back from the reply's text (`activities/prompted_tools.py`)."""
        self.streaming = streaming
        """Stream replies where the endpoint allows it (`MODEL_STREAMING`)."""
        self._api_key = api_key
        register_secret(api_key)  # scrubbed from every model error, this model's or another's
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=request_timeout_seconds,
        )
        self._plain_only: set[str] = set()
        """Endpoints (base URLs) that refused streaming: asked with plain requests from then on."""

    @property
    def endpoint(self) -> str:
        return str(self._client.base_url)

    def streams_to(self, endpoint: str | None = None) -> bool:
        """Whether a request to `endpoint` (default: this model's) is streamed."""
        return self.streaming and (endpoint or self.endpoint) not in self._plain_only

    async def complete(self, request: ModelRequest) -> ModelReply:
        reply = await self._complete(request)
        if self.prompts_tools(request):
            return with_prompted_calls(reply)
        if request.tools and request.tool_choice != "none":
            return with_calls_written_as_text(reply, {tool.name for tool in request.tools})
        return reply

    def prompts_tools(self, request: ModelRequest) -> bool:
        """Whether `request` offers tools in the prompt (prompted mode, tools, not `none`)."""
        return (
            self.tool_calling == "prompted"
            and bool(request.tools)
            and request.tool_choice != "none"
        )

    async def _complete(self, request: ModelRequest) -> ModelReply:
        model = request.model or self.default_model
        kwargs = self.request_kwargs(request, model)
        endpoint = self.endpoint
        if not self.streams_to(endpoint):
            return await self._plain(kwargs, model, request.messages)
        try:
            return await self._streamed(kwargs, model, request.messages)
        except StreamingRefused as refused:
            watch_progress(None)
            try:
                reply = await self._plain(kwargs, model, request.messages)
            except ApplicationError:
                if refused.about_streaming:
                    self._stop_streaming(endpoint, refused.error)
                raise
            self._stop_streaming(endpoint, refused.error)
            return reply

    def request_kwargs(self, request: ModelRequest, model: str) -> dict[str, Any]:
        """The arguments of `chat.completions.create` for `request`, without streaming."""
        if self.tool_calling == "prompted":
            offered = request.tools if self.prompts_tools(request) else []
            kwargs: dict[str, Any] = {
                "model": model,
                "messages": prompted_messages(request.messages, offered),
            }
        else:
            kwargs = {"model": model, "messages": [message_to_wire(m) for m in request.messages]}
        if request.tools and self.tool_calling == "native":
            kwargs["tools"] = [tool_to_wire(t) for t in request.tools]
            if request.tool_choice is not None:
                kwargs["tool_choice"] = request.tool_choice
            if request.parallel_tool_calls is not None:
                kwargs["parallel_tool_calls"] = request.parallel_tool_calls
        if request.response_format is not None:
            kwargs["response_format"] = request.response_format
        return kwargs

    def _stop_streaming(self, endpoint: str, error: Exception) -> None:
        if endpoint in self._plain_only:
            return
        self._plain_only.add(endpoint)
        logger.warning(
            "model endpoint %s refused streaming (%s); asking it with plain requests from now on",
            scrub(endpoint, self._api_key),
            scrub(str(error), self._api_key)[:300],
        )

    async def _plain(
        self, kwargs: dict[str, Any], model: str, prompt: Sequence[ChatMessage]
    ) -> ModelReply:
        try:
            completion = await self._post(kwargs)
        except (openai.OpenAIError, ValueError) as error:
            raise to_application_error(error, self._api_key) from None
        return self._read_completion(completion, model, prompt)

    def _read_completion(
        self, completion: Any, model: str, prompt: Sequence[ChatMessage]
    ) -> ModelReply:
        try:
            return reply_from_completion(completion, model, prompt)
        except (AttributeError, TypeError, IndexError, ValidationError) as error:
            # A 200 whose body is not a chat completion (a proxy's HTML page, a bare string,
            # a choice without a message): as unusable as a malformed body, and as retryable.
            raise to_application_error(error, self._api_key) from None

    async def _streamed(
        self, kwargs: dict[str, Any], model: str, prompt: Sequence[ChatMessage]
    ) -> ModelReply:
        """One streaming request, assembled. Raises `StreamingRefused` when a plain request
        should be tried instead, `ApplicationError` for every other failure."""
        try:
            stream = await self._post(
                {**kwargs, "stream": True, "stream_options": {"include_usage": True}}
            )
        except openai.APIStatusError as error:
            if refuses_streaming(error):
                raise StreamingRefused(error, about_streaming=mentions_streaming(error)) from None
            raise to_application_error(error, self._api_key) from None
        except (openai.OpenAIError, ValueError) as error:
            raise to_application_error(error, self._api_key) from None
        async with stream:
            if not is_event_stream(stream.response):
                # The server ignored `stream` and answered with a plain completion: read it,
                # and ask this endpoint plainly from now on.
                reply = await self._read_plain_body(stream.response, model, prompt)
                self._stop_streaming(self.endpoint, ValueError("it answered without streaming"))
                return reply
            assembler = StreamAssembler(model)
            watch_progress(assembler.progress)
            try:
                async for chunk in stream:
                    assembler.add(chunk)
                return assembler.reply(prompt)
            except StreamIncomplete as error:
                raise StreamingRefused(error, about_streaming=False) from None
            except (openai.OpenAIError, ValueError, AttributeError, TypeError) as error:
                # A dropped connection, an error event or a malformed chunk mid-stream: the
                # activity fails and Temporal retries the whole call (nothing partial is kept).
                raise to_application_error(error, self._api_key) from None

    async def _post(self, body: dict[str, Any]) -> Any:
        """`chat.completions.create(**body)` without the SDK's request transform.

        `create` walks every message and tool through the SDK's TypedDict annotations before
        sending them (`async_maybe_transform`), which renames nothing in a body made of plain
        JSON like ours but cost 15 ms of CPU per call at 60 messages (most of a turn's worker
        CPU; BENCHMARKS.md). `client.post` is the SDK's documented way to send a body as it is;
        the response, the stream and the errors are the same objects `create` gives.
        """
        if body.get("stream"):
            return await self._client.post(
                "/chat/completions",
                body=body,
                cast_to=ChatCompletion,
                stream=True,
                stream_cls=openai.AsyncStream[ChatCompletionChunk],
            )
        return await self._client.post("/chat/completions", body=body, cast_to=ChatCompletion)

    async def _read_plain_body(
        self, response: Any, model: str, prompt: Sequence[ChatMessage]
    ) -> ModelReply:
        """A whole `chat.completion` JSON body, read as leniently as the client reads one."""
        try:
            body = json.loads(await response.aread())
        except (openai.OpenAIError, ValueError) as error:
            raise to_application_error(error, self._api_key) from None
        if not isinstance(body, dict):
            not_object = TypeError(f"the body is a JSON {type(body).__name__}, not an object")
            raise to_application_error(not_object, self._api_key) from None
        return self._read_completion(ChatCompletion.construct(**body), model, prompt)

    async def close(self) -> None:
        await self._client.close()
