"""The `call_model` activity: one chat completion, through whichever `ChatModel` the worker
was configured with (a real OpenAI-compatible server, or the offline demo model)."""

from __future__ import annotations

from temporalio import activity

from activities.chat_model import ChatModel
from activities.context_cache import ContextCache
from activities.heartbeat import with_heartbeats
from contracts.model_io import CALL_MODEL_ACTIVITY, ModelReply, ModelRequest

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
        """
        if request.context is not None:
            messages = self.cache.resolve(request.context)
            request = request.model_copy(update={"messages": messages, "context": None})
        activity.logger.info(
            "model call: model=%s turn=%d messages=%d tools=%d",
            request.model or self._model.default_model,
            request.turn,
            len(request.messages),
            len(request.tools),
        )
        return await with_heartbeats(self._model.complete(request), self._heartbeat_every)
