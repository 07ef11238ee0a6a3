"""Assemble a streamed chat completion (`chat.completion.chunk` objects) into the `ModelReply`
the same reply would have given without streaming, and describe the progress so far.

Pure: chunks in, a reply out. The rules follow what OpenAI-compatible servers send:

- text (`delta.content`) and reasoning (`delta.reasoning_content` or `delta.reasoning`) come in
  pieces that are concatenated; the reasoning keeps the key the provider used;
- a tool call comes in pieces that name it by `index`: usually the id, type and name first and
  then the arguments in pieces, but a server may send the id and the name in separate chunks,
  repeat them in every chunk, or interleave several calls; arguments are concatenated, an id or
  a name is kept once (a repeat is not appended again);
- `finish_reason` arrives with the last piece of the choice, `model` with every chunk, and
  `usage` (asked for with `stream_options.include_usage`) in a last chunk without choices.

A stream that ends before its choice finished (no `finish_reason`) is incomplete: its text must
not become a reply (`StreamIncomplete`).

Each piece of text or reasoning also goes to a listener as it arrives (the model activity's
event stream, `activities.model_progress.text_listener`, when the assembler is made inside one).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from durable_agents.activities.model_progress import TextListener, text_listener
from durable_agents.activities.provider_fields import merge_piece, provider_fields
from durable_agents.contracts.messages import ChatMessage, ReasoningKey, ToolCall
from durable_agents.contracts.model_io import PROGRESS_TAIL_CHARS, ModelProgress, ModelReply
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.tokens import estimate_messages_tokens, estimate_text_tokens

REASONING_KEYS: tuple[ReasoningKey, ...] = ("reasoning_content", "reasoning")


class StreamIncomplete(Exception):
    """The stream ended before the reply did (no chunk finished the choice)."""


def arguments_text(arguments: Any) -> str:
    """A tool call's `arguments` as the JSON text the API specifies. Some servers send the
    arguments as a JSON object (or array) instead of a string holding one: it is written back
    as JSON text, so the call runs with those arguments instead of failing the reply. Nothing
    (`None`) is the empty string; any other value is kept as its JSON text, for the tool's
    argument check to refuse with a message the model can read."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return ""
    return json.dumps(arguments, ensure_ascii=False)


def reasoning_of(fields: Any) -> tuple[ReasoningKey, str] | None:
    """The reasoning text in a message or delta's extra fields, and the key it came under:
    `reasoning_content` first, then `reasoning`; only text counts."""
    extra = getattr(fields, "model_extra", None) or {}
    for key in REASONING_KEYS:
        value = extra.get(key)
        if isinstance(value, str):
            return key, value
    return None


def _field(value: Any, name: str) -> Any:
    """`value.name` or `value[name]`: the SDK's models keep fields it does not know (a
    provider's own, like llama-server's `timings`) as plain dicts."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def cached_prompt_tokens(reported: Any, timings: Any = None) -> int:
    """The prompt tokens the provider served from its prompt cache: OpenAI's
    `usage.prompt_tokens_details.cached_tokens`, else llama-server's top-level
    `timings.cache_n`, else 0."""
    for value in (
        _field(_field(reported, "prompt_tokens_details"), "cached_tokens"),
        _field(timings, "cache_n"),
    ):
        if isinstance(value, int) and value >= 0:
            return value
    return 0


def usage_from(reported: Any, timings: Any = None) -> TokenUsage | None:
    """The provider's usage object as a `TokenUsage` (None when it sent none); `timings`: the
    completion's llama-server timings, where it has them (the cached prompt tokens)."""
    if reported is None:
        return None
    prompt = _field(reported, "prompt_tokens") or 0
    completion = _field(reported, "completion_tokens") or 0
    total = _field(reported, "total_tokens") or prompt + completion
    return TokenUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total,
        cached_prompt_tokens=min(cached_prompt_tokens(reported, timings), prompt),
    )


def estimate_usage(prompt: Sequence[ChatMessage], reply: ModelReply) -> TokenUsage:
    """Usage for a reply that reported none: `loop.tokens`' estimate, flagged `estimated`."""
    written = (reply.content or "") + (reply.reasoning_content or "")
    written += "".join(call.name + call.arguments for call in reply.tool_calls)
    prompt_tokens = estimate_messages_tokens(prompt)
    completion_tokens = estimate_text_tokens(written)
    return TokenUsage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
        estimated=True,
    )


@dataclass
class _CallParts:
    """One tool call being assembled."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    """What the provider put on the call besides (`activities.provider_fields`)."""

    def add(self, piece: Any) -> None:
        merge_piece(self.extra, provider_fields(piece))
        call_id = getattr(piece, "id", None)
        if isinstance(call_id, str) and call_id and call_id != self.id:
            # Ids are sent once (OpenAI) or repeated in every chunk (some servers): keep the
            # first; a different one on the same index is a server's bug we do not glue on.
            self.id = self.id or call_id
        function = getattr(piece, "function", None)
        if function is None:
            return
        name = getattr(function, "name", None)
        if isinstance(name, str) and name and name != self.name:
            self.name = name if not self.name else self.name + name
        arguments = arguments_text(getattr(function, "arguments", None))
        if arguments:
            self.arguments.append(arguments)


class StreamAssembler:
    """Takes the chunks of one streamed completion; `reply()` gives the assembled reply and
    `progress()` what has been received so far."""

    def __init__(
        self, fallback_model: str, attempt: int = 1, listener: TextListener | None = None
    ) -> None:
        self._listener = listener if listener is not None else text_listener()
        self.fallback_model = fallback_model
        self.attempt = attempt
        self.chunks = 0
        self.model: str | None = None
        self.finish_reason: str | None = None
        self.usage: TokenUsage | None = None
        self.reasoning_key: ReasoningKey | None = None
        self._content: list[str] = []
        self._content_seen = False
        self._content_chars = 0
        self._reasoning: list[str] = []
        self._reasoning_chars = 0
        self._calls: dict[int, _CallParts] = {}
        self._last_call: int | None = None
        self._extra: dict[str, Any] = {}

    def add(self, chunk: Any) -> None:
        """Fold one `ChatCompletionChunk` into the reply."""
        self.chunks += 1
        model = getattr(chunk, "model", None)
        if isinstance(model, str) and model and self.model is None:
            self.model = model
        usage = usage_from(getattr(chunk, "usage", None), getattr(chunk, "timings", None))
        if usage is not None:
            self.usage = usage  # servers that report usage on every chunk: the last one counts
        for choice in getattr(chunk, "choices", None) or []:
            if (getattr(choice, "index", 0) or 0) != 0:
                continue  # only the first choice is read, as without streaming
            delta = getattr(choice, "delta", None)
            if delta is not None:
                self._add_delta(delta)
            finish_reason = getattr(choice, "finish_reason", None)
            if finish_reason:
                self.finish_reason = finish_reason

    def _add_delta(self, delta: Any) -> None:
        merge_piece(self._extra, provider_fields(delta))
        content = getattr(delta, "content", None)
        if isinstance(content, str):
            self._content_seen = True
            if content:
                self._content.append(content)
                self._content_chars += len(content)
                self._tell("text", content)
        reasoning = reasoning_of(delta)
        if reasoning is not None:
            key, text = reasoning
            if self.reasoning_key is None:
                self.reasoning_key = key
            if key == self.reasoning_key and text:  # a server sending both: one copy
                self._reasoning.append(text)
                self._reasoning_chars += len(text)
                self._tell("reasoning", text)
        for piece in getattr(delta, "tool_calls", None) or []:
            self._add_call_piece(piece)

    def _tell(self, kind: str, piece: str) -> None:
        if self._listener is not None:
            try:
                self._listener(kind, piece)
            except Exception:  # (the listener's own bug must not break the reply)
                self._listener = None

    def _add_call_piece(self, piece: Any) -> None:
        index = getattr(piece, "index", None)
        if not isinstance(index, int):
            # No index (a few servers): a new id starts a new call, anything else continues
            # the last one.
            call_id = getattr(piece, "id", None)
            last = self._calls.get(self._last_call) if self._last_call is not None else None
            if last is None or (call_id and last.id and call_id != last.id):
                index = max(self._calls, default=-1) + 1
            else:
                index = self._last_call if self._last_call is not None else 0
        self._calls.setdefault(index, _CallParts()).add(piece)
        self._last_call = index

    @property
    def text(self) -> str:
        return "".join(self._content)

    def progress(self) -> ModelProgress:
        """What has arrived so far, for the activity's heartbeat details."""
        tail: list[str] = []
        size = 0
        for piece in reversed(self._content):
            tail.append(piece)
            size += len(piece)
            if size >= PROGRESS_TAIL_CHARS:
                break
        writing = self._calls.get(self._last_call) if self._last_call is not None else None
        return ModelProgress(
            model=self.model or self.fallback_model,
            attempt=self.attempt,
            streaming=True,
            chars=self._content_chars,
            tail="".join(reversed(tail))[-PROGRESS_TAIL_CHARS:],
            tool=(writing.name or None) if writing is not None else None,
            tool_calls=len(self._calls),
            reasoning_chars=self._reasoning_chars,
        )

    def reply(self, prompt: Sequence[ChatMessage] = ()) -> ModelReply:
        """The assembled reply; usage estimated from `prompt` and the reply when the stream
        carried none. Raises `StreamIncomplete` if the choice never finished."""
        if self.finish_reason is None:
            raise StreamIncomplete(
                f"the stream ended after {self.chunks} chunks without a finish_reason"
            )
        calls = [
            ToolCall(
                id=parts.id,
                name=parts.name,
                arguments="".join(parts.arguments),
                provider_fields=parts.extra or None,
            )
            for _, parts in sorted(self._calls.items())
        ]
        text = self.text
        # As without streaming: no content at all is None; a tool-call reply whose content
        # came only as empty pieces is None too (OpenAI sends `"content": null` there).
        content = text if (text or (self._content_seen and not calls)) else None
        reasoning = "".join(self._reasoning) if self.reasoning_key is not None else None
        reply = ModelReply(
            model=self.model or self.fallback_model,
            content=content,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            reasoning_content=reasoning,
            reasoning_key=self.reasoning_key if reasoning is not None else None,
            provider_fields=self._extra or None,
        )
        usage = self.usage if self.usage is not None else estimate_usage(prompt, reply)
        return reply.model_copy(update={"usage": usage})


def assemble_stream(
    chunks: Iterable[Any], fallback_model: str, prompt: Sequence[ChatMessage] = ()
) -> ModelReply:
    """The `ModelReply` of a whole stream of chunks (see `StreamAssembler`)."""
    assembler = StreamAssembler(fallback_model)
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.reply(prompt)
