"""The `call_model` activity: one chat completion, through whichever `ChatModel` the worker
was configured with (a real OpenAI-compatible server, or the offline demo model)."""

from __future__ import annotations

import time

from temporalio import activity

from durable_agents.activities.activity_events import ModelCallEvents
from durable_agents.activities.cache_affinity import CacheAffinity, EagerDispatch, named_reply
from durable_agents.activities.chat_model import ChatModel
from durable_agents.activities.context_cache import ContextCache
from durable_agents.activities.heartbeat import with_heartbeats
from durable_agents.activities.model_progress import ProgressBoard, progress_board
from durable_agents.contracts.model_io import (
    CALL_MODEL_ACTIVITY,
    ModelProgress,
    ModelReply,
    ModelRequest,
)

HEARTBEAT_EVERY_SECONDS = 1.0


class ModelActivities:
    """Holds the worker's model backend; its method is registered as the `call_model` activity."""

    def __init__(
        self,
        model: ChatModel,
        heartbeat_every_seconds: float = HEARTBEAT_EVERY_SECONDS,
        cache: ContextCache | None = None,
        worker_queue: str | None = None,
        identity: str | None = None,
        affinity: CacheAffinity = "on",
    ):
        self._model = model
        self._heartbeat_every = heartbeat_every_seconds
        self.cache = cache if cache is not None else ContextCache()
        self.worker_queue = worker_queue
        """This worker's own task queue (cache affinity), which it polls: every reply names it."""
        self.identity = worker_queue or identity
        """What names this worker in replies and kept outputs: its queue, or without affinity
        a name of the same form that no one polls (`ModelReply.answered_by`)."""
        self.affinity: CacheAffinity = affinity if worker_queue is not None else "off"
        """Whether replies ask for the next call on this worker's queue (`named_reply`)."""
        self.dispatch = EagerDispatch()
        """Whether this worker's server dispatches its activities eagerly, as seen so far."""

    def keep_output(self, ref: str, content: str) -> str | None:
        """Keep a tool call's output for the run's next model call, if the output is long
        enough: this worker's name (`ToolOutput.kept_by`), or None."""
        if self.identity is None or not self.cache.outputs.keep(ref, content):
            return None
        return self.identity

    @activity.defn(name=CALL_MODEL_ACTIVITY)
    async def call_model(self, request: ModelRequest) -> ModelReply:
        """Ask the model; heartbeats while waiting so cancellation and worker loss show fast.

        A request with a context delta is expanded from this worker's context cache first.
        Each heartbeat carries a `ModelProgress`: while the provider streams, how much text has
        arrived and its tail, or the tool call being written. A retried attempt starts from
        scratch (the earlier attempt's details are ignored), and only the assembled reply is
        returned, so history holds one result per model call.

        With `request.events` (the run's `stream_deltas`), the call is published on the run's
        event stream as it goes: `model_call_started` with this attempt, then the reply's text
        and reasoning in batches (`activities.activity_events`); publishing never fails it.

        As a local activity (`model_call: local`) it neither heartbeats nor publishes: the
        workflow asks it without `events`, and the server does not know it.
        """
        cached = request.context is not None  # the reply names where the cache now holds it
        info = activity.info()
        # (Only the shared queue shows whether the server dispatches eagerly: never the worker's
        # own queue, nor a local call, which no server dispatches.)
        if info.attempt == 1 and not info.is_local and info.task_queue != self.worker_queue:
            self.dispatch.observe(info.current_attempt_scheduled_time, info.started_time)
        if request.context is not None:
            resolved = self.cache.resolve(request.context, request.tools)
            if resolved is None:
                activity.logger.info(
                    "context cache miss for %s: asking the workflow for the whole conversation",
                    request.context.key,
                )
                return ModelReply(
                    model=request.model or "", context_cache_miss=True, answered_by=self.identity
                )
            request = request.model_copy(
                update={"messages": resolved.messages, "tools": resolved.tools, "context": None}
            )
        model = request.model or self._model.default_model
        started = time.monotonic()
        progress = ModelProgress(model=model, attempt=info.attempt)
        if request.events is None:
            reply = await self._complete(request, ProgressBoard(progress))
        else:
            async with ModelCallEvents(
                model_call=request.turn,
                purpose=request.purpose,
                model=model,
                turn=request.events.session_turn,
                announced=request.events.announced,
            ) as events:
                reply = await self._complete(request, ProgressBoard(progress, events.piece))
            if events.quiet:
                reply = reply.model_copy(update={"deltas_sent": False})
            elif events.unsent:
                reply = reply.model_copy(update={"text_unsent": events.unsent})
        latency_ms = int((time.monotonic() - started) * 1000)
        activity.logger.info(
            "model %s answered turn %d in %d ms: %d tool calls, %d tokens",
            model,
            request.turn,
            latency_ms,
            len(reply.tool_calls),
            reply.usage.total_tokens,
            extra={
                "agent": {
                    "model": model,
                    "turn": request.turn,
                    "purpose": request.purpose,
                    "messages": len(request.messages),
                    "latency_ms": latency_ms,
                    "tokens": reply.usage.total_tokens,
                    "finish_reason": reply.finish_reason,
                }
            },
        )
        if cached:
            reply = named_reply(reply, self.identity, self.affinity, self.dispatch)
        return reply

    async def _complete(self, request: ModelRequest, board: ProgressBoard) -> ModelReply:
        with progress_board(board):  # the task `with_heartbeats` makes inherits the board
            work = self._model.complete(request)
            if activity.info().is_local:  # (`model_call: local`: the server knows no heartbeat
                return await work  # of it; its timeout bounds it, a cancel reaches it here)
            return await with_heartbeats(work, self._heartbeat_every, details=board.current)
