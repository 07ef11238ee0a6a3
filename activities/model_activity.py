"""The `call_model` activity: one chat completion, through whichever `ChatModel` the worker
was configured with (a real OpenAI-compatible server, or the offline demo model)."""

from __future__ import annotations

import time

from temporalio import activity

from activities.chat_model import ChatModel
from activities.context_cache import ContextCache
from activities.heartbeat import with_heartbeats
from activities.model_progress import ProgressBoard, progress_board
from contracts.model_io import CALL_MODEL_ACTIVITY, ModelProgress, ModelReply, ModelRequest

HEARTBEAT_EVERY_SECONDS = 1.0


class ModelActivities:
    """Holds the worker's model backend; its method is registered as the `call_model` activity."""

    def __init__(
        self,
        model: ChatModel,
        heartbeat_every_seconds: float = HEARTBEAT_EVERY_SECONDS,
        cache: ContextCache | None = None,
    ):
        self._model = model
        self._heartbeat_every = heartbeat_every_seconds
        self.cache = cache if cache is not None else ContextCache()

    @activity.defn(name=CALL_MODEL_ACTIVITY)
    async def call_model(self, request: ModelRequest) -> ModelReply:
        """Ask the model; heartbeats while waiting so cancellation and worker loss show fast.

        A request with a context delta is expanded from this worker's context cache first.
        Each heartbeat carries a `ModelProgress`: while the provider streams, how much text has
        arrived and its tail, or the tool call being written. A retried attempt starts from
        scratch (the earlier attempt's details are ignored), and only the assembled reply is
        returned, so history holds one result per model call.
        """
        if request.context is not None:
            resolved = self.cache.resolve(request.context, request.tools)
            if resolved is None:
                activity.logger.info(
                    "context cache miss for %s: asking the workflow for the whole conversation",
                    request.context.key,
                )
                return ModelReply(model=request.model or "", context_cache_miss=True)
            request = request.model_copy(
                update={"messages": resolved.messages, "tools": resolved.tools, "context": None}
            )
        model = request.model or self._model.default_model
        started = time.monotonic()
        board = ProgressBoard(ModelProgress(model=model, attempt=activity.info().attempt))
        with progress_board(board):  # the task `with_heartbeats` makes inherits the board
            reply = await with_heartbeats(
                self._model.complete(request), self._heartbeat_every, details=board.current
            )
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
        return reply
