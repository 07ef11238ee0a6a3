"""`ModelGateway`: the one way an agent run talks to models.

It owns what is the same for every model call: the `call_model` activity's options (in
Temporal's own types), the context transfer (only the messages added since the run's previous
call, with one full resend when the worker's context cache misses), fallback models, mapping a
failed activity to a run failure, and counting what each call cost. It returns answers; the
workflow records them.

Fallback: the primary model is tried first on every call; the next model is tried when one
fails for good: its retries are used up (timeouts, 429, 5xx, connection errors), or the provider
refuses the model itself (401, 403, 404: `ModelUnusable`). A request the provider rejects
(400, 422: `ModelRequestRejected`, e.g. a context that is too long) fails the run: another model
would only hide it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    RetryState,
    TimeoutError,
    TimeoutType,
    is_cancelled_exception,
)
from temporalio.workflow import ActivityCancellationType, ActivityConfig, LocalActivityConfig

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_input import AgentInput
    from durable_agents.contracts.agent_result import ModelCall, ModelFailure
    from durable_agents.contracts.errors import (
        MODEL_CALL_FAILED,
        MODEL_REQUEST_REJECTED,
        MODEL_UNUSABLE,
        NO_PRICE_FOR_MODEL,
    )
    from durable_agents.contracts.events import ModelCallRetrying, ModelCallStarted
    from durable_agents.contracts.messages import ChatMessage
    from durable_agents.contracts.model_io import (
        CALL_MODEL_ACTIVITY,
        LEGACY_MISS,
        CachedConversation,
        ContextDelta,
        ModelEvents,
        ModelReply,
        ModelRequest,
        ToolSchema,
    )
    from durable_agents.contracts.scratchpad import Scratchpad
    from durable_agents.loop.budgets import NoPrice, cost_of, price_for
    from durable_agents.loop.cache_affinity import affinity_queue, missed_elsewhere, reply_worker
    from durable_agents.loop.context_plan import SummaryDue, plan_context
    from durable_agents.loop.context_reuse import (
        conversation_digest,
        message_digest,
        reuse_pieces,
        tools_digest,
    )
    from durable_agents.loop.context_window import ContextFit, context_messages
    from durable_agents.loop.kept_outputs import KeptOutput, refer_to_kept
    from durable_agents.loop.model_reply import normalize_reply
    from durable_agents.loop.output import OutputSpec, response_format
    from durable_agents.loop.progress import ModelAnswer
    from durable_agents.loop.summaries import model_call_summary
    from durable_agents.workflows.callees.local_tool import local_failure
    from durable_agents.workflows.run_events import RunEvents
    from durable_agents.workflows.run_log import RunLog, ms_since

MODEL_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
AFFINITY_FALLBACK = timedelta(seconds=5)
"""How long a model call waits on the worker-specific queue of the worker that holds its
conversation before it goes to the shared queue instead (that worker is gone or stuck)."""
LOCAL_RETRY_THRESHOLD = timedelta(seconds=1)
"""A local model call (`model_call: local`) waits for its next attempt in the worker when the
backoff is at most this (the policy's first, 1 s); a longer one is a durable timer, during which
the run takes signals, updates, queries and a cancel as it does between calls."""
Purpose = Literal["turn", "final_answer", "summary"]


def model_activity_config(params: AgentInput) -> ActivityConfig:
    """Options of every `call_model` activity of a run: Temporal owns the retries (the
    `openai` client makes none); a request the provider rejects is not retried."""
    return ActivityConfig(
        start_to_close_timeout=timedelta(seconds=params.model_timeout_seconds),
        heartbeat_timeout=MODEL_HEARTBEAT_TIMEOUT,
        retry_policy=RetryPolicy(
            initial_interval=timedelta(seconds=1),
            backoff_coefficient=2.0,
            maximum_interval=timedelta(seconds=60),
            maximum_attempts=params.model_max_attempts,
            non_retryable_error_types=[MODEL_REQUEST_REJECTED],
        ),
        cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    )


def local_model_config(params: AgentInput) -> LocalActivityConfig:
    """Options of every model call of a run with `model_call: local`, a local activity in the
    worker running the run: the attempt timeout, retry policy and cancellation of the activity
    (`model_activity_config`), no heartbeat (the server does not know a local activity: a dead
    worker shows when the run's workflow task times out), backoffs over `LOCAL_RETRY_THRESHOLD`
    as durable timers. No schedule-to-close, as for the activity: `model_max_attempts` bounds
    the call, and a total would cut short the wait a provider asks for (`Retry-After`)."""
    config = model_activity_config(params)
    return LocalActivityConfig(
        start_to_close_timeout=config["start_to_close_timeout"],
        retry_policy=config["retry_policy"],
        local_retry_threshold=LOCAL_RETRY_THRESHOLD,
        cancellation_type=config["cancellation_type"],
    )


def failure_of(error: ActivityError) -> tuple[str, bool]:
    """What went wrong with a model, and whether the next model may be tried."""
    cause = error.cause
    detail = cause.message if isinstance(cause, ApplicationError | TimeoutError) else str(error)
    if isinstance(cause, ApplicationError) and cause.type == MODEL_UNUSABLE:
        return detail, True
    exhausted = error.retry_state in (RetryState.MAXIMUM_ATTEMPTS_REACHED, RetryState.TIMEOUT)
    rejected = isinstance(cause, ApplicationError) and cause.type == MODEL_REQUEST_REJECTED
    return detail, exhausted and not rejected


def worker_gone(error: ActivityError) -> bool:
    """Whether no worker started the activity in time: its schedule-to-start timeout fired."""
    cause = error.cause
    return isinstance(cause, TimeoutError) and cause.type == TimeoutType.SCHEDULE_TO_START


def failures_text(failures: list[ModelFailure]) -> str:
    return "every model failed: " + "; ".join(f"{f.model}: {f.error}" for f in failures)


def answered(answer: ModelAnswer | None, turn: int) -> ModelAnswer:
    """`answer`, which a full resend always gives (a cache miss needs a delta to miss)."""
    if answer is None:
        raise ApplicationError(
            f"model call failed at turn {turn}: the worker's context cache missed a full resend",
            type=MODEL_CALL_FAILED,
            non_retryable=True,
        )
    return answer


def run_conversation() -> CachedConversation:
    """The cache entry of this workflow's continue-as-new chain (keyed by its first run), whose
    state a run or a session carries to its next run."""
    info = workflow.info()
    return CachedConversation(key=f"{info.workflow_id}/{info.first_execution_run_id}")


class ModelGateway:
    """Calls the model for one run (one instance per workflow run, or per session turn)."""

    def __init__(
        self,
        params: AgentInput,
        log: RunLog,
        conversation: CachedConversation,
        output: OutputSpec | None = None,
        events: RunEvents | None = None,
        kept: dict[str, KeptOutput] | None = None,
    ):
        self._params = params
        self._kept: dict[str, KeptOutput] = kept if kept is not None else {}
        """The outputs of the tool calls since the last model call that their workers keep, by
        call id (noted by the tool round): a delta to that worker names them."""
        self._run_events = events
        """Where the gateway announces each call (`model_call_started`); None: nowhere."""
        self._config = model_activity_config(params)
        self._local = local_model_config(params) if params.model_call == "local" else None
        """The local activity's options with `model_call: local` (None: each call an activity)."""
        self._models: list[str | None] = [params.model, *params.fallback_models]
        """In the order they are tried; None is the worker's default model."""
        self._response_format = (
            response_format(output) if output is not None and output.mode == "native" else None
        )
        self._log = log
        self._conversation = conversation
        self._sent_at: int | None = None
        """The cache entry's `sequence` after this gateway's last call: while it is still the
        entry's, the cache holds this gateway's conversation and a delta only appends."""
        self._tools: tuple[list[ToolSchema], str] | None = None
        session = params.session
        self._events = (
            ModelEvents(session_turn=session.turn if session is not None else None)
            if params.stream_deltas
            else None
        )
        """What each call's activity needs to publish its deltas (None: `stream_deltas` off)."""

    async def ask(
        self,
        pad: Scratchpad,
        tools: list[ToolSchema],
        *,
        purpose: Literal["turn", "final_answer"] = "turn",
        extra: list[ChatMessage] | None = None,
    ) -> ModelAnswer:
        """One conversation turn: send the fitted context (as a delta unless the run asked for
        `context_transfer: full`) and return the reply with every tool call given a usable id.
        A final-answer call offers no tools and keeps no tool calls."""
        params = self._params
        fit = plan_context(pad, params.max_context_tokens, params.context_strategy == "summarize")
        request = ModelRequest(
            model=params.model,
            tools=tools,
            tool_choice="none" if purpose == "final_answer" and tools else None,
            parallel_tool_calls=params.parallel_tool_calls,
            response_format=self._response_format,
            turn=pad.iteration,
            purpose=purpose,
        )
        if params.context_transfer == "full":
            messages = context_messages(
                pad.messages, fit, pad.summary, prompt_index=pad.prompt_index
            )
            answer = await self._call(
                request.model_copy(update={"messages": [*messages, *(extra or [])]})
            )
        else:
            answer = await self._ask_with_delta(pad, request, extra or [], fit)
        self._kept.clear()  # (the next delta carries only the messages added after this call)
        answer = answered(answer, pad.iteration)
        reply = normalize_reply(answer.reply, pad.iteration)
        if purpose == "final_answer":
            reply = reply.model_copy(update={"tool_calls": []})
        return ModelAnswer(reply, answer.call, answer.cost_usd)

    async def _ask_with_delta(
        self,
        pad: Scratchpad,
        request: ModelRequest,
        extra: list[ChatMessage],
        fit: ContextFit,
    ) -> ModelAnswer | None:
        """Send what the worker's cache lacks: the messages added since this gateway's previous
        call, or (a session turn's first call) pieces of the previous turn's conversation plus
        the new messages, and the tools unless they are the ones it holds; the whole
        conversation and the tools once if the cache misses."""
        held = self._conversation
        tools = request.tools
        if self._tools is None or self._tools[0] is not tools:
            self._tools = (tools, tools_digest(tools))
        delta, whole, digests = self._deltas(pad, extra, fit)
        asked = request
        if held.message_digests and held.tools_digest == self._tools[1]:
            delta = delta.model_copy(update={"tools_cached": True, "tools_digest": self._tools[1]})
            asked = request.model_copy(update={"tools": []})
        try:
            answer = await self._call(asked.model_copy(update={"context": delta}))
            if answer is None:  # the worker does not hold what the delta builds on: send all
                whole_request = request.model_copy(update={"context": whole})
                answer = await self._call(whole_request, announce=False)
        except BaseException:
            held.forget()
            raise
        held.message_digests, held.tools_digest = digests, self._tools[1]
        held.sequence += 1
        self._sent_at = held.sequence
        return answer

    def _deltas(
        self, pad: Scratchpad, extra: list[ChatMessage], fit: ContextFit
    ) -> tuple[ContextDelta, ContextDelta, list[str]]:
        """What a call sends the worker's cache: the delta (what the cache lacks), the whole
        conversation (sent instead if the cache misses), and the conversation's message digests
        once sent; both name the digest of the conversation they make."""
        held = self._conversation
        whole = ContextDelta(
            key=held.key,
            base_length=0,
            held=0,
            new_messages=pad.messages,
            prompt_index=pad.prompt_index,
            kept_from=fit.kept_from,
            dropped=fit.dropped,
            summary=pad.summary,
            extra=extra,
        )
        delta, digests = self._lacking(whole, pad)
        result = conversation_digest(digests)
        whole = whole.model_copy(update={"result_digest": result})
        delta = delta.model_copy(update={"result_digest": result})
        if delta.held:  # workers that predate `held` must miss, not append
            delta = delta.model_copy(update={"base_length": LEGACY_MISS})
        return delta, whole, digests

    def _lacking(self, whole: ContextDelta, pad: Scratchpad) -> tuple[ContextDelta, list[str]]:
        """`whole` cut to what the cache lacks, and the conversation's message digests: the
        messages after this gateway's own conversation (outputs their workers keep named, not
        sent), or pieces of another's (a session's last turn, the run continued), or all."""
        held = self._conversation
        if self._sent_at == held.sequence and held.message_digests:  # this gateway's: append
            base = len(held.message_digests)
            new = pad.messages[base:]
            digests = [*held.message_digests, *(message_digest(m) for m in new)]
            sent, refs = refer_to_kept(new, self._kept, held.holder)
            update = {"held": base, "new_messages": sent, "kept": refs or None}
            return whole.model_copy(update=update), digests
        if held.message_digests:
            reuse = reuse_pieces(held.message_digests, pad.messages)
            update = {
                "held": len(held.message_digests),
                "new_messages": reuse.new,
                "reuse": reuse.pieces,
            }
            return whole.model_copy(update=update), reuse.digests
        return whole, [message_digest(m) for m in pad.messages]

    async def summarize(self, pad: Scratchpad, due: SummaryDue) -> ModelAnswer:
        """Fold the messages about to leave the window into the running summary."""
        return await self.once(pad, due.request, "summary")

    async def once(
        self,
        pad: Scratchpad,
        messages: list[ChatMessage],
        purpose: Literal["summary", "plan", "synthesis"],
        tools: list[ToolSchema] | None = None,
    ) -> ModelAnswer:
        """A model call outside the conversation (its own messages): a summary, a plan, the
        final synthesis of a plan's steps."""
        request = ModelRequest(
            model=self._params.model,
            messages=messages,
            tools=tools or [],
            turn=pad.iteration,
            purpose=purpose,
        )
        answer = answered(await self._call(request), pad.iteration)
        reply = normalize_reply(answer.reply, pad.iteration)
        return ModelAnswer(reply, answer.call, answer.cost_usd)

    def _affinity(self, request: ModelRequest) -> str | None:
        """The worker-specific task queue to send `request` to: the one whose worker holds the
        conversation, for a call with a context delta (None: the run's own queue; always for a
        local call, which runs in the worker running the run).

        No patch: the queue comes from a recorded reply (`ModelReply.worker_queue`), so a run
        recorded before affinity existed has none and replays scheduling as it did, and replay
        compares an activity's type and id, not its task queue."""
        queue = self._conversation.worker_queue
        return queue if request.context is not None and self._local is None else None

    def _note_worker(self, delta: ContextDelta, reply: ModelReply) -> None:
        """What a reply to a delta says about where the conversation is (`loop.cache_affinity`):
        a delta taken by a worker other than the holder marks the run as missed; an answer makes
        its worker the holder and sets the queue of the next delta.

        No patch: the queue comes from recorded replies, and a reply recorded before affinity
        was decided this way is neither `routable` nor names a missing worker, so it routes as
        it did (`worker_queue` kept when a reply names none); replay compares an activity's
        type and id, not its task queue."""
        held = self._conversation
        held.missed = held.missed or missed_elsewhere(delta.held, reply, held.holder)
        if reply.context_cache_miss:
            return
        queue = affinity_queue(reply, held.missed)
        if queue is not None or reply.routable:
            held.worker_queue = queue
        held.holder = reply_worker(reply)

    def _announced(
        self, request: ModelRequest, model: str | None, *, again: Literal["", "fallback", "resend"]
    ) -> ModelEvents | None:
        """Say on the run's stream that the call is asked, where the run has one; what the
        call's activity then needs to publish its own events (`announced`: no start of its
        own). First (`again` empty): the call's one `model_call_started` (attempt 1). Asked
        again, the call starts over: `model_call_retrying`, for the next fallback model
        (`fallback`: in place of a second `model_call_started`, at the same offset) or for the
        whole conversation after the worker lacked what a delta builds on (`resend`: the retried
        attempt of a call whose worker died misses there)."""
        if self._run_events is None:
            return self._events
        fields = {"model_call": request.turn, "model": model, "purpose": request.purpose}
        if not again:
            self._run_events.emit(ModelCallStarted, **fields)
        else:
            self._run_events.emit(ModelCallRetrying, attempt=1, reason=again, **fields)
        events = self._events
        return events.model_copy(update={"announced": True}) if events is not None else None

    async def _call(self, request: ModelRequest, *, announce: bool = True) -> ModelAnswer | None:
        """Run the `call_model` activity with each model in turn until one answers; None when
        the worker's context cache missed (nothing was asked), or when the worker that holds
        the conversation is gone (its queue's schedule-to-start timeout: the caller resends the
        whole conversation on the run's own queue)."""
        started = workflow.now()
        failures: list[ModelFailure] = []
        index = 0
        events, announced = self._events, None  # (the model index last announced)
        again: Literal["", "fallback", "resend"]
        while index < len(self._models):
            model = self._models[index]
            if index != announced:  # (the same one again: no worker took it, nothing shown)
                again = "fallback" if announced is not None else "" if announce else "resend"
                events, announced = self._announced(request, model, again=again), index
            queue = self._affinity(request)
            try:
                reply = await self._execute(request, model, events, queue)
            except ActivityError as error:
                if is_cancelled_exception(error):
                    raise
                if queue is not None and worker_gone(error):
                    if self._holder_gone(request, queue):
                        return None  # another worker lacks what the delta builds on
                    continue  # a whole conversation: the same call on the shared queue
                index = self._next_model(request, index, failures, error)
                continue
            if request.context is not None:
                self._note_worker(request.context, reply)
            if reply.context_cache_miss:
                return None
            return self._answer(request, reply, started, failures)
        raise ApplicationError("no model to ask", type=MODEL_CALL_FAILED, non_retryable=True)

    async def _execute(
        self,
        request: ModelRequest,
        model: str | None,
        events: ModelEvents | None,
        queue: str | None,
    ) -> ModelReply:
        """One `call_model` activity: `request` to `model`, on the worker-specific `queue` that
        holds the conversation (None: the run's own)."""
        asked = request.model_copy(update={"model": model, "events": events})
        summary = model_call_summary(model, request.turn, request.purpose)
        if self._local is not None:
            return await self._execute_locally(asked, summary, self._local)
        config: ActivityConfig = {**self._config, "summary": summary}
        if queue is not None:
            config["task_queue"] = queue
            config["schedule_to_start_timeout"] = AFFINITY_FALLBACK
        return await workflow.execute_activity(
            CALL_MODEL_ACTIVITY, asked, result_type=ModelReply, **config
        )

    async def _execute_locally(
        self, asked: ModelRequest, summary: str, config: LocalActivityConfig
    ) -> ModelReply:
        """One `call_model` local activity (`model_call: local`), in this worker. It publishes
        nothing while it runs (its events would reach the run only with the workflow task's next
        heartbeat): the reply's whole text goes with the workflow's `model_call_finished`. A
        failure reads as the activity's would (`local_failure`); a cancel passes through."""
        options: LocalActivityConfig = {**config, "summary": summary}
        try:
            reply: ModelReply = await workflow.execute_local_activity(
                CALL_MODEL_ACTIVITY,
                asked.model_copy(update={"events": None}),
                result_type=ModelReply,
                **options,
            )
        except (ApplicationError, TimeoutError) as failure:
            policy = config.get("retry_policy") or RetryPolicy()
            raise local_failure(CALL_MODEL_ACTIVITY, failure, policy) from failure
        streamed = asked.events is not None
        return reply.model_copy(update={"deltas_sent": False}) if streamed else reply

    def _holder_gone(self, request: ModelRequest, queue: str) -> bool:
        """No worker took the call on `queue` in time: the conversation has no holder now.
        True when the call was a delta that builds on what only that worker held (the caller
        resends the whole conversation); else the same call goes to the shared queue."""
        self._log(
            "no worker took turn %d's model call on %s within %ds: sending it to the shared queue",
            request.turn,
            queue,
            AFFINITY_FALLBACK.total_seconds(),
            outcome="affinity_fallback",
        )
        self._conversation.worker_queue = self._conversation.holder = None
        return request.context is not None and bool(request.context.held)

    def _next_model(
        self, request: ModelRequest, index: int, failures: list[ModelFailure], error: ActivityError
    ) -> int:
        """After model `index` failed (noted in `failures`): the index of the next model to try,
        or the call's failure, naming every model's."""
        detail, may_fall_back = failure_of(error)
        name = self._models[index] or "the default model"
        failures.append(ModelFailure(model=name, error=detail))
        if may_fall_back and index + 1 < len(self._models):
            self._log(
                "model %s failed at turn %d (%s); trying %s",
                name,
                request.turn,
                detail,
                self._models[index + 1],
                model=name,
                outcome="fallback",
            )
            return index + 1
        raise ApplicationError(
            f"model call failed at turn {request.turn}: "
            + (detail if len(failures) == 1 else failures_text(failures)),
            type=MODEL_CALL_FAILED,
            non_retryable=True,
        ) from error

    def _answer(
        self,
        request: ModelRequest,
        reply: ModelReply,
        started: datetime,
        failures: list[ModelFailure],
    ) -> ModelAnswer:
        self._log(
            "model %s answered turn %d (%s): %d tool calls, %d tokens",
            reply.model,
            request.turn,
            request.purpose,
            len(reply.tool_calls),
            reply.usage.total_tokens,
            model=reply.model,
            purpose=request.purpose,
            latency_ms=ms_since(started),
            tokens=reply.usage.total_tokens,
            tool_calls=len(reply.tool_calls),
            finish_reason=reply.finish_reason,
        )
        call = ModelCall(
            turn=request.turn,
            purpose=request.purpose,
            model=reply.model,
            failed_models=failures,
            usage=reply.usage,
            tool_calls=len(reply.tool_calls),
            finish_reason=reply.finish_reason,
            started_at=started,
            finished_at=workflow.now(),
            reasoning_chars=len(reply.reasoning_content or ""),
            reasoning=reply.reasoning_content if self._params.record_reasoning else None,
        )
        return ModelAnswer(reply, call, self._cost(reply))

    def _cost(self, reply: ModelReply) -> float | None:
        """What the reply cost at the run's prices; a model without a price fails the run."""
        budget = self._params.cost_budget
        if budget is None:
            return None
        try:
            return cost_of(reply.usage, price_for(reply.model, budget.prices))
        except NoPrice as error:
            raise ApplicationError(
                str(error), type=NO_PRICE_FOR_MODEL, non_retryable=True
            ) from None
