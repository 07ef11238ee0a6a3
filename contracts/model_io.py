"""Input and output of the `call_model` activity."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.messages import ChatMessage, ReasoningKey, ToolCall
from contracts.omitted import empty_omitted, false_omitted, none_omitted
from contracts.usage import TokenUsage

CALL_MODEL_ACTIVITY = "call_model"
"""Activity type of the model call (the workflow schedules it by this name)."""


class ToolSchema(BaseModel):
    """What the model is told about one tool: the Chat Completions `function` definition."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]


class ContextDelta(BaseModel):
    """The conversation as a delta: the messages added since this run's previous model call,
    and how to lay out the context to send (see `loop.context_window.context_messages`).

    The worker keeps each run's messages in a cache keyed by `key`, so a model activity's input
    (and so the history) grows by the new messages only, not by the whole conversation. If the
    worker does not hold exactly `base_length` messages for `key` (it restarted, or another
    worker ran the previous call), the activity answers `context_cache_miss` and the workflow
    sends the whole list once (`base_length=0`).

    A conversation that repeats another held under the same key in another order (a session's
    next turn: the remembered turns, then the new message) names the cached messages it reuses
    in `reuse` (see `loop.context_reuse`). `sequence` counts the deltas the workflow has had
    applied under `key` before this one; the worker holds it with the messages, so a worker that
    missed a later call (another worker answered it) is never taken to hold the current list.
    """

    key: str
    base_length: int
    new_messages: list[ChatMessage]
    sequence: int | None = none_omitted()
    reuse: list[tuple[int, int]] | None = none_omitted()
    """The messages are these pieces: `(start, end)` of the `base_length` cached ones, `(-1, n)`
    the next `n` of `new_messages`. Unset: the cached messages, then `new_messages`."""
    tools_cached: bool = false_omitted()
    """The request's `tools` are left out: they are the ones the cache holds under `key` (sent
    by an earlier call). A tool list is as long as a few messages, and the same on every call."""
    prompt_index: int = 1
    kept_from: int = 1
    dropped: int = 0
    summary: str | None = none_omitted()
    extra: list[ChatMessage] = empty_omitted()
    """Sent after the context this once, not remembered (e.g. the final-answer request)."""


class CachedConversation(BaseModel):
    """What the worker's context cache holds under `key`, as far as the workflow knows: a digest
    of each message the last successful delta built (`loop.context_reuse.message_digest`), how
    many deltas built it (`sequence`), and a digest of the tools it holds. A run keeps one; a
    session's turns share one, and the session carries it across continue-as-new, so the next
    run's first call names the messages the cache holds instead of sending them again."""

    key: str
    message_digests: list[str] = []
    sequence: int = 0
    tools_digest: str | None = None

    def forget(self) -> None:
        """After a failed call the workflow cannot know what the worker holds: start over."""
        self.message_digests = []
        self.tools_digest = None


class ModelRequest(BaseModel):
    """One model call: explicit `messages`, or a `context` delta. `model=None` means the
    worker's configured default model."""

    model: str | None = none_omitted()
    messages: list[ChatMessage] = empty_omitted()
    context: ContextDelta | None = none_omitted()
    tools: list[ToolSchema] = empty_omitted()
    tool_choice: Literal["auto", "none"] | None = none_omitted()
    """`none` asks for text only (the last call at max iterations, summaries)."""
    parallel_tool_calls: bool | None = none_omitted()
    """Whether the model may ask for several tool calls in one reply (None: provider default);
    sent only when tools are offered."""
    response_format: dict[str, Any] | None = none_omitted()
    """The provider's structured-output request (`json_schema`), for native typed answers."""
    turn: int = 1
    purpose: Literal["turn", "final_answer", "summary", "plan", "synthesis"] = "turn"


class ModelReply(BaseModel):
    """What the model answered: text, tool calls, or both."""

    model: str
    content: str | None = None
    tool_calls: list[ToolCall] = []
    finish_reason: str | None = None
    usage: TokenUsage = TokenUsage()
    reasoning_content: str | None = None
    reasoning_key: ReasoningKey | None = Field(default=None, exclude_if=lambda value: value is None)
    """The field the provider sent the reasoning in (see `ChatMessage.reasoning_key`)."""
    context_cache_miss: bool = False
    """The worker did not hold the conversation the request's delta builds on; nothing was
    asked. The workflow resends the whole conversation (an expected event, not a failure)."""

    def as_message(self) -> ChatMessage:
        """The assistant message to append to the conversation for this reply."""
        return ChatMessage(
            role="assistant",
            content=self.content,
            tool_calls=self.tool_calls,
            reasoning_content=self.reasoning_content,
            reasoning_key=self.reasoning_key,
        )


PROGRESS_TAIL_CHARS = 200
"""How much of the text written so far a `ModelProgress` carries."""


class ModelProgress(BaseModel):
    """What a running `call_model` activity has received so far: its heartbeat details, shown
    by the Web UI's pending-activity view, `temporal workflow describe` and `agent run`/`watch`.

    While the provider streams, `chars` counts the answer text received and `tail` is its last
    `PROGRESS_TAIL_CHARS` characters; `tool` names the tool call being written, if any. Without
    streaming (a plain request, or a model that does not stream) only `model` and `attempt` are
    set. `attempt` is the activity attempt that sent these details: a retry starts from zero,
    and details of an earlier attempt are stale.
    """

    model: str
    attempt: int = 1
    streaming: bool = False
    chars: int = 0
    tail: str = ""
    tool: str | None = None
    tool_calls: int = 0
    reasoning_chars: int = 0
