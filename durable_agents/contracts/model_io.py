"""Input and output of the `call_model` activity."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from durable_agents.contracts.messages import ChatMessage, ReasoningKey, ToolCall
from durable_agents.contracts.omitted import (
    default_omitted,
    empty_omitted,
    false_omitted,
    none_omitted,
)
from durable_agents.contracts.usage import TokenUsage

CALL_MODEL_ACTIVITY = "call_model"
"""Activity type of the model call (the workflow schedules it by this name)."""
ModelCallKind = Literal["activity", "local"]
"""How a run's model calls run (`AgentSettings.model_call`): activities, or local activities."""


class ToolSchema(BaseModel):
    """What the model is told about one tool: the Chat Completions `function` definition."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]


class ContextDelta(BaseModel):
    """The conversation as a delta: what the worker's context cache lacks, and how to lay out
    the context to send (see `loop.context_window.context_messages`).

    The worker keeps each run's messages (and tools) in a cache keyed by `key`, so a model
    activity's input (and so the history) grows by the new messages only, not by the whole
    conversation. A delta names what it builds on: the first `held` cached messages, extended
    by `new_messages`, or (`reuse`) pieces of them and the new messages in another order (a
    session's next turn: the remembered turns, then the new message; see `loop.context_reuse`).
    `result_digest` is the digest of the conversation it makes: the worker sends the model
    exactly that conversation or nothing. When it does not hold what the delta builds on (it
    restarted, another worker ran a call, a call failed midway), it answers `context_cache_miss`
    and the workflow sends the whole conversation once (`held=0`).

    `base_length` is what workers before `held` read: -1 on a delta only a current worker can
    apply, so an older worker misses and gets the whole conversation during a rolling deploy.
    """

    key: str
    base_length: int
    new_messages: list[ChatMessage]
    held: int | None = none_omitted()
    """How many cached messages the delta builds on (0: it carries the whole conversation)."""
    result_digest: str | None = none_omitted()
    """`loop.context_reuse.conversation_digest` of the conversation the delta makes."""
    reuse: list[tuple[int, int]] | None = none_omitted()
    """The messages are these pieces: `(start, end)` of the `held` cached ones, `(-1, n)` the
    next `n` of `new_messages`. Unset: the cached messages, then `new_messages`."""
    tools_cached: bool = false_omitted()
    """The request's `tools` are left out: they are the ones the cache holds under `key` (sent
    by an earlier call), whose digest is `tools_digest`. A tool list is as long as a few
    messages, and the same on every call."""
    tools_digest: str | None = none_omitted()
    prompt_index: int = default_omitted(1)
    kept_from: int = default_omitted(1)
    dropped: int = default_omitted(0)
    summary: str | None = none_omitted()
    extra: list[ChatMessage] = empty_omitted()
    """Sent after the context this once, not remembered (e.g. the final-answer request)."""
    kept: dict[int, str] | None = none_omitted()
    """`new_messages[i]` is a tool result sent without its content: the output of the call whose
    idempotency key is `kept[i]`, which ran on the worker that holds the conversation the delta
    builds on, and which that worker keeps (`activities.kept_outputs`). So history holds a
    tool's output once, in its activity's result. A worker without it misses, and the whole
    conversation is sent."""


LEGACY_MISS = -1
"""`ContextDelta.base_length` of a delta that workers before `held` must not apply."""


class CachedConversation(BaseModel):
    """What the worker's context cache holds under `key`, as far as the workflow knows: a digest
    of each message the last successful delta built (`loop.context_reuse.message_digest`), and
    a digest of the tools it holds. A run keeps one; a
    session's turns share one, and the session carries it across continue-as-new, so the next
    run's first call names the messages the cache holds instead of sending them again."""

    key: str
    message_digests: list[str] = []
    sequence: int = 0
    """Calls that built it (or failed): a gateway that made the last one may just append."""
    tools_digest: str | None = None
    worker_queue: str | None = none_omitted()
    """The worker-specific task queue of the worker that built the entry (its replies name it):
    the next call with a delta goes there (`workflows.model_gateway`, cache affinity)."""
    holder: str | None = none_omitted()
    """The worker that built the entry (`worker_queue`, or a worker without affinity's
    `ModelReply.answered_by`): the tool outputs it keeps may be named in the next delta
    (`loop.kept_outputs`), since a worker that holds the conversation is the one that can
    answer it."""
    missed: bool = false_omitted()
    """A delta of this conversation sent to the shared queue reached a worker other than its
    holder (a context-cache miss there): the shared queue does not bring the conversation back
    to the worker that holds it (no eager dispatch, several workers, a restarted worker), so
    from then on its deltas go to the holder's own queue when the holder polls one
    (`ModelReply.routable`; `loop.cache_affinity`). Carried with the conversation."""

    def forget(self) -> None:
        """After a failed call the workflow cannot know what the worker holds: start over."""
        self.message_digests = []
        self.tools_digest = None
        self.sequence += 1


class ModelEvents(BaseModel):
    """What a `call_model` activity needs to publish its events: the session turn they carry."""

    session_turn: int | None = none_omitted()
    announced: bool = false_omitted()
    """The workflow published this call's `model_call_started` (attempt 1) as it scheduled the
    call: the activity publishes its own start only for a retried attempt."""


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
    events: ModelEvents | None = none_omitted()
    """Set when the run streams deltas (`stream_deltas`): the activity publishes
    `model_call_started` and the reply's text as it arrives to the run's event stream."""


class ModelReply(BaseModel):
    """What the model answered: text, tool calls, or both. Unset fields are left out of the
    JSON (`contracts.omitted`): every model call records one."""

    model: str
    content: str | None = none_omitted()
    tool_calls: list[ToolCall] = empty_omitted()
    finish_reason: str | None = none_omitted()
    usage: TokenUsage = TokenUsage()
    reasoning_content: str | None = none_omitted()
    reasoning_key: ReasoningKey | None = none_omitted()
    """The field the provider sent the reasoning in (see `ChatMessage.reasoning_key`)."""
    provider_fields: dict[str, Any] | None = none_omitted()
    """Other fields the provider put on the assistant message, sent back verbatim with it (see
    `ChatMessage.provider_fields`)."""
    context_cache_miss: bool = false_omitted()
    """The worker did not hold the conversation the request's delta builds on; nothing was
    asked. The workflow resends the whole conversation (an expected event, not a failure)."""
    worker_queue: str | None = none_omitted()
    """The worker-specific task queue of the worker that answered, whose context cache now holds
    the conversation, when the worker asks for the run's next delta there: its affinity is on,
    or its server was seen not to dispatch activities eagerly (`activities.cache_affinity`).
    None: the shared queue, unless the run has missed (`answered_by`, `routable`)."""
    answered_by: str | None = none_omitted()
    """The worker names itself here when it does not ask for the next call (`worker_queue`
    unset): the tool outputs it keeps may be named in the next delta, which a server that
    dispatches eagerly (a dev server) hands to the same worker. A context-cache miss names the
    worker that missed here too, so the run can tell a miss elsewhere from its holder's own."""
    routable: bool = false_omitted()
    """`answered_by` is a queue the worker polls for `call_model` (cache affinity on demand,
    `AGENT_CACHE_AFFINITY=auto`): a run whose deltas have missed elsewhere sends them there
    (`CachedConversation.missed`). False: a worker with affinity off, whose name no one polls."""
    deltas_sent: bool = default_omitted(True)
    """False: the reply came before its first batch of text deltas went, and none was sent
    (`activities.activity_events.ModelCallEvents.quiet`); the workflow's `model_call_finished`
    carries the whole text instead. Left out of the JSON while true."""
    text_unsent: int = default_omitted(0, ge=0)
    """How many characters at the end of `content` no text delta carried: the reply outlasted
    its first batch, and what was left of it when it was complete goes with the workflow's
    `model_call_finished` (its `rest`) instead of one more signal
    (`activities.activity_events.ModelCallEvents.unsent`). Left out of the JSON while 0."""

    @property
    def text_rest(self) -> str | None:
        """The end of `content` that no delta carried (None: the deltas carried it all)."""
        content = self.content or ""
        if not 0 < self.text_unsent <= len(content):
            return None
        return content[len(content) - self.text_unsent :]

    def as_message(self) -> ChatMessage:
        """The assistant message to append to the conversation for this reply."""
        return ChatMessage(
            role="assistant",
            content=self.content,
            tool_calls=self.tool_calls,
            reasoning_content=self.reasoning_content,
            reasoning_key=self.reasoning_key,
            provider_fields=self.provider_fields,
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
