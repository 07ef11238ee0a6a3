"""A scripted in-memory `ChatModel` for testing the agent loop without the HTTP hop.

The loop's logic (guards, budgets, approvals, repetition, max iterations, stop tools) does not
depend on how a reply travelled, so those tests run the real worker against the real Temporal
server with this model in the `call_model` activity instead of `OpenAIChatModel` talking to
`testkit/fake_openai.py`. Wire format, fault injection, error mapping, secrets and streaming stay
on the real `openai` client and the fake server.

The API mirrors `durable_agents.testing.fake_openai`, so a test moves over mechanically::

    model.enqueue(tool_calls(call("echo", {"text": "a"}, id="c1")), text("done"))
    model.set_handler(lambda request: text(f"{len(request.messages)} messages"))
    assert model.requests[1].messages[-1] == ChatMessage.tool_result("c1", "a")

What differs: a handler sees the `ModelRequest` (with its messages resolved from the worker's
context cache, as `OpenAIChatModel` sees it) instead of a JSON body, recorded requests are
`ModelRequest`s, and failures are the `ApplicationError`s a real backend raises (`error`,
`rejected`) instead of HTTP responses. `gate` holds a reply until the test releases it, so a test
can look at a run while a model call is in flight without sleeping.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeAlias

from temporalio.exceptions import ApplicationError

from durable_agents.contracts.errors import MODEL_REQUEST_REJECTED, MODEL_UNAVAILABLE
from durable_agents.contracts.messages import ToolCall
from durable_agents.contracts.model_io import ModelReply, ModelRequest
from durable_agents.contracts.usage import TokenUsage

__all__ = [
    "DEFAULT_USAGE",
    "Completion",
    "Failure",
    "Gate",
    "Handler",
    "Reply",
    "ReplyLike",
    "ScriptedCall",
    "ScriptedChatModel",
    "call",
    "error",
    "gate",
    "hang",
    "rejected",
    "text",
    "tool_calls",
]

DEFAULT_USAGE: tuple[int, int] = (10, 5)
"""(prompt_tokens, completion_tokens) when a reply does not say otherwise (as the fake server)."""


@dataclass(frozen=True)
class ScriptedCall:
    """One tool call; `arguments` is the raw JSON text (possibly malformed), `id=None` means
    `call_<n>` from the model's counter when served (as the fake server does)."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True)
class Completion:
    """A successful answer: text, tool calls, or both."""

    content: str | None = None
    tool_calls: tuple[ScriptedCall, ...] = ()
    reasoning_content: str | None = None
    finish_reason: str = "stop"
    usage: tuple[int, int] = DEFAULT_USAGE
    model: str | None = None


@dataclass(frozen=True)
class Failure:
    """Raise the `ApplicationError` a model backend raises (see `activities/model_errors.py`)."""

    message: str
    type: str = MODEL_UNAVAILABLE
    non_retryable: bool = False
    next_retry_delay: timedelta | None = None


@dataclass(frozen=True)
class Gate:
    """Wait until `release` is set, then serve `then`. The wait ends early (the call is
    cancelled) when Temporal cancels the activity; `ScriptedChatModel.cancelled` records it."""

    release: asyncio.Event
    then: ReplyLike


Reply: TypeAlias = Completion | Failure | Gate
ReplyLike: TypeAlias = Reply | str
"""A reply, or a plain `str` as shorthand for `text(that_str)`."""

Handler: TypeAlias = Callable[[ModelRequest], ReplyLike]
"""A function from the request to the reply."""


def text(
    content: str,
    *,
    reasoning_content: str | None = None,
    finish_reason: str = "stop",
    usage: tuple[int, int] = DEFAULT_USAGE,
) -> Completion:
    """A text answer (optionally with `reasoning_content`)."""
    return Completion(
        content=content,
        reasoning_content=reasoning_content,
        finish_reason=finish_reason,
        usage=usage,
    )


def call(
    name: str, arguments: str | Mapping[str, Any] = "{}", id: str | None = None
) -> ScriptedCall:
    """One tool call: a mapping is `json.dumps`-ed, a `str` is sent verbatim."""
    args = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return ScriptedCall(name=name, arguments=args, id=id)


def tool_calls(
    *calls: ScriptedCall,
    content: str | None = None,
    reasoning_content: str | None = None,
    finish_reason: str = "tool_calls",
    usage: tuple[int, int] = DEFAULT_USAGE,
) -> Completion:
    """An answer requesting one or more tool calls, in the given order."""
    if not calls:
        raise ValueError("tool_calls() needs at least one call(...)")
    return Completion(
        content=content,
        tool_calls=tuple(calls),
        reasoning_content=reasoning_content,
        finish_reason=finish_reason,
        usage=usage,
    )


def error(
    message: str = "scripted model failure",
    *,
    type: str = MODEL_UNAVAILABLE,
    non_retryable: bool = False,
    next_retry_delay: timedelta | None = None,
) -> Failure:
    """A failure of the model call; by default a retryable `ModelUnavailable` (like a 5xx)."""
    return Failure(message, type, non_retryable, next_retry_delay)


def rejected(message: str = "scripted model: request rejected") -> Failure:
    """A non-retryable `ModelRequestRejected` (like a 4xx from the provider)."""
    return Failure(message, MODEL_REQUEST_REJECTED, non_retryable=True)


def gate(release: asyncio.Event, then_reply: ReplyLike) -> Gate:
    """Hold the answer until the test sets `release`."""
    return Gate(release, then_reply)


def hang() -> Gate:
    """Never answer: the call waits until Temporal cancels it."""
    return Gate(asyncio.Event(), text("never sent"))


class ScriptedChatModel:
    """A `ChatModel` answering from a script: a FIFO of replies (`enqueue`), then a `handler`.

    It runs inside the worker's event loop (the `call_model` activity is async), which is the
    test's loop too, so tests may read it at any time without locks.
    """

    def __init__(self, default_model: str = "scripted-model") -> None:
        self.default_model = default_model
        self._queue: deque[ReplyLike] = deque()
        self._handler: Handler | None = None
        self._requests: list[ModelRequest] = []
        self._errors: list[str] = []
        self._cancelled: list[ModelRequest] = []
        self._ids = itertools.count(1)
        self.served = 0
        """How many answers (not failures) were returned."""

    # -- scripting ---------------------------------------------------------------------

    def enqueue(self, *replies: ReplyLike) -> None:
        """Append replies to the FIFO script; each model call consumes one."""
        self._queue.extend(replies)

    def set_handler(self, handler: Handler | None) -> None:
        """Answer with `handler(request)` whenever the queue is empty (`None` clears it)."""
        self._handler = handler

    @property
    def pending_replies(self) -> int:
        """How many queued replies have not been consumed yet."""
        return len(self._queue)

    # -- inspection --------------------------------------------------------------------

    @property
    def requests(self) -> list[ModelRequest]:
        """Every request received, oldest first (a copy)."""
        return list(self._requests)

    @property
    def request_count(self) -> int:
        return len(self._requests)

    @property
    def last_request(self) -> ModelRequest:
        """The most recent request (`IndexError` if none)."""
        return self._requests[-1]

    @property
    def errors(self) -> list[str]:
        """Script problems (handler crashes, exhausted script); assert it is empty."""
        return list(self._errors)

    @property
    def cancelled(self) -> list[ModelRequest]:
        """Requests whose call was cancelled while it waited at a `gate` or `hang`."""
        return list(self._cancelled)

    # -- the ChatModel interface -------------------------------------------------------

    async def complete(self, request: ModelRequest) -> ModelReply:
        self._requests.append(request)
        try:
            reply = self._next_reply(request)
        except Exception as crash:
            message = f"scripted model: handler raised {type(crash).__name__}: {crash}"
            self._errors.append(message)
            raise ApplicationError(
                message, type=MODEL_REQUEST_REJECTED, non_retryable=True
            ) from None
        if reply is None:
            message = (
                f"scripted model: script exhausted - no reply queued for request "
                f"#{len(self._requests)} and no handler set"
            )
            self._errors.append(message)
            raise ApplicationError(message, type=MODEL_REQUEST_REJECTED, non_retryable=True)
        return await self._serve(reply, request)

    def _next_reply(self, request: ModelRequest) -> ReplyLike | None:
        if self._queue:
            return self._queue.popleft()
        if self._handler is None:
            return None
        reply = self._handler(request)
        if not isinstance(reply, (str, Completion, Failure, Gate)):
            raise TypeError(f"handler returned {reply!r}, expected a reply object or str")
        return reply

    async def _serve(self, reply: ReplyLike, request: ModelRequest) -> ModelReply:
        if isinstance(reply, str):
            reply = text(reply)
        if isinstance(reply, Gate):
            try:
                await reply.release.wait()
            except asyncio.CancelledError:
                self._cancelled.append(request)
                raise
            return await self._serve(reply.then, request)
        if isinstance(reply, Failure):
            raise ApplicationError(
                reply.message,
                type=reply.type,
                non_retryable=reply.non_retryable,
                next_retry_delay=reply.next_retry_delay,
            )
        prompt_tokens, completion_tokens = reply.usage
        self.served += 1
        return ModelReply(
            model=reply.model or request.model or self.default_model,
            content=reply.content,
            tool_calls=[
                ToolCall(
                    id=c.id if c.id is not None else f"call_{next(self._ids)}",
                    name=c.name,
                    arguments=c.arguments,
                )
                for c in reply.tool_calls
            ],
            finish_reason=reply.finish_reason,
            usage=TokenUsage(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                total_tokens=prompt_tokens + completion_tokens,
            ),
            reasoning_content=reply.reasoning_content,
        )
