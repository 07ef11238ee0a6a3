"""Events an activity publishes on its workflow's event stream (`contracts.events`): a model
call's retried attempt (`model_call_retrying`) and its text as it streams, a tool's progress.

They go through `WorkflowStreamClient.from_within_activity()`: batched, each batch one signal
(`__temporal_workflow_stream_publish`, de-duplicated by publisher and sequence) in the
workflow's history. Batching is by time: what arrives within the batch's interval of its first
item goes with it, and text pieces within one batch are joined into one delta. The interval
starts at `BATCH_SECONDS` and doubles with each batch up to `BATCH_MAX_SECONDS`, so the first
words show at once and a long reply costs about one signal a second, not seven. The last batch
goes when the activity ends, before its result, so every delta precedes the workflow's
`model_call_finished`, except for a model call's text: what of it is left when the reply is
complete is not sent (`ModelCallEvents.unsent`); the workflow's `model_call_finished` carries it
(`rest`, or the whole text for a reply quicker than the first batch), which saves a signal and
the workflow task it wakes on every model call.

Publishing never fails the activity: a stream that cannot be reached (a workflow without one,
a server error, a closed run) is logged once and the activity carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Literal

from temporalio import activity
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from durable_agents.contracts.events import (
    EVENTS_TOPIC,
    EventBase,
    ModelCallRetrying,
    ModelCallStarted,
    ModelPurpose,
    ReasoningDelta,
    TextDelta,
    ToolProgress,
)

logger = logging.getLogger(__name__)

BATCH_SECONDS = 0.15
"""How long pieces of text (or progress reports) gather before the first batch goes."""
BATCH_MAX_SECONDS = 1.0
"""The longest a later batch gathers (each batch's interval is twice the one before)."""
BATCH_CHARS = 4_000
"""A batch that reaches this much text goes at once."""
STARTED_AFTER_SECONDS = 1.0
"""A model call that has written nothing yet announces its start after this long."""
FINAL_FLUSH_SECONDS = 2.0
"""How long the activity's end waits for its last batch to reach the workflow."""


class ActivityEvents:
    """A batching publisher for one activity attempt (an async context manager, or `open` /
    `close`). A batch is what gathered within the interval of its first item (`hurry` sends it
    at once); the interval starts at `interval` and doubles with each batch sent, up to
    `max_interval`; `close` sends the last one."""

    def __init__(
        self,
        *,
        turn: int | None = None,
        interval: float = BATCH_SECONDS,
        max_interval: float = BATCH_MAX_SECONDS,
    ) -> None:
        self._turn = turn
        self._interval = interval
        self._max_interval = max(interval, max_interval)
        self._client: WorkflowStreamClient | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._due = asyncio.Event()
        """Something gathered: a batch is due within `interval`."""
        self._hurry = asyncio.Event()
        """Send the batch now (a large batch, the first progress report, `close`)."""
        self._closing = False
        self._failed = False
        self.sent = False
        """Whether a batch has gone (or is going) to the workflow."""

    async def __aenter__(self) -> ActivityEvents:
        self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close(cancelling=exc_type is not None)

    @property
    def opened(self) -> bool:
        return self._ticker is not None

    def open(self) -> None:
        """Connect to the run's stream (inside the activity, on its event loop)."""
        try:
            # Batches are sent by this class (`_tick`), not by the client's own timer.
            self._client = WorkflowStreamClient.from_within_activity(
                batch_interval=timedelta(hours=1)
            )
        except Exception as error:
            self._fail("could not open the run's event stream", error)
        self._ticker = asyncio.create_task(self._tick())

    async def close(self, *, cancelling: bool = False) -> None:
        """Send what is left and stop, waiting at most `FINAL_FLUSH_SECONDS` (a batch in
        flight is not cut off: the last one goes after it, in order)."""
        ticker = self._ticker
        if ticker is None:
            return
        self._closing = True
        self._due.set()
        self._hurry.set()
        try:
            done, _ = await asyncio.wait({ticker}, timeout=FINAL_FLUSH_SECONDS)
        except asyncio.CancelledError:
            ticker.cancel()
            if not cancelling:
                raise
            return
        if not done:
            ticker.cancel()  # (not awaited: a stuck call must not hold the activity)
            self._fail("the last events did not reach the run", TimeoutError("timed out"))

    def base(self) -> dict[str, Any]:
        """The fields every event of this activity carries."""
        info = activity.info()
        return {"workflow_id": info.workflow_id or "", "turn": self._turn, "at": _now()}

    def due(self, *, hurry: bool = False) -> None:
        """Something gathered (see `_gather`): send it within `interval`, or now."""
        self._due.set()
        if hurry:
            self._hurry.set()

    def publish(self, event: EventBase) -> bool:
        """Put `event` in the batch being sent (from `_gather`)."""
        if self._client is None:
            return False
        try:
            self._client.topic(EVENTS_TOPIC).publish(event)
        except Exception as error:
            self._fail("an event could not be queued", error)
            return False
        return True

    def _gather(self) -> bool:
        """Publish what gathered since the last batch (subclasses); True if anything."""
        return False

    async def _tick(self) -> None:
        """One batch per wake-up: wait until something is due, let more gather for the
        interval (unless hurried), send, double the interval; after `close`, the last batch,
        then stop."""
        interval = self._interval
        while True:
            await self._due.wait()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hurry.wait(), interval)
            self._due.clear()
            self._hurry.clear()
            closing = self._closing
            if self._gather() or closing:
                await self._send()
                interval = min(interval * 2, self._max_interval)
            if closing:
                return

    async def _send(self) -> None:
        if self._client is None:
            return
        self.sent = True
        try:
            await self._client.flush()
        except Exception as error:  # (the batch stays pending: it goes with the next one)
            self._fail("a batch of events did not reach the run", error)

    def _fail(self, what: str, error: BaseException) -> None:
        if not self._failed:
            logger.warning("%s: %s (the activity goes on without it)", what, error)
        self._failed = True


class ModelCallEvents(ActivityEvents):
    """How this attempt starts, then the reply's text and reasoning as deltas.

    A retried attempt publishes `model_call_retrying` at once (it voids the earlier text; the
    call's one `model_call_started` is the workflow's, so a consumer counting open calls still
    reaches zero at its `model_call_finished`). A first attempt whose start the workflow
    published as it scheduled the call (`announced`, every run with a stream) publishes only its
    text. Otherwise (a request that does not say so) `model_call_started` goes with the first
    batch of text, or after `STARTED_AFTER_SECONDS` of a call that has not written any; a first
    attempt that answers sooner without text publishes nothing."""

    def __init__(
        self,
        *,
        model_call: int,
        purpose: ModelPurpose,
        model: str,
        turn: int | None,
        interval: float = BATCH_SECONDS,
        announced: bool = False,
    ) -> None:
        super().__init__(turn=turn, interval=interval)
        self._announced = announced
        self._model_call = model_call
        self._purpose = purpose
        self._model = model
        self._attempt = 1
        self._started = False
        self._pieces: dict[str, list[str]] = {"text": [], "reasoning": []}
        self._chars = 0
        self._timer: asyncio.TimerHandle | None = None
        self.unsent = 0
        """Characters at the end of the reply's text that `close` did not send, because
        the rest of a reply that outlasted its first batch goes with `model_call_finished`
        (`ModelReply.text_unsent`); 0 when the deltas carried it all (or for a quiet reply)."""

    async def __aenter__(self) -> ModelCallEvents:
        await super().__aenter__()
        self._attempt = activity.info().attempt
        if self._attempt > 1:
            self.due(hurry=True)
        elif self._announced:
            self._started = True  # the workflow published this attempt's start
        else:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(STARTED_AFTER_SECONDS, self.due)
        return self

    async def close(self, *, cancelling: bool = False) -> None:
        if self._timer is not None:
            self._timer.cancel()
        kept = kept_at_close(
            first_announced=self._first_announced(),
            sent=self.sent,
            reasoning_pending=bool(self._pieces["reasoning"]),
        )
        if kept == "whole":
            for pieces in self._pieces.values():
                pieces.clear()  # the workflow's `model_call_finished` carries the whole text
        elif kept == "rest":
            text = self._pieces["text"]
            self.unsent = sum(len(piece) for piece in text)
            text.clear()  # the workflow's `model_call_finished` carries it (`rest`)
        await super().close(cancelling=cancelling)

    def _first_announced(self) -> bool:
        return self._attempt == 1 and self._announced

    @property
    def quiet(self) -> bool:
        """A quick reply: a first attempt, announced by the workflow, that answered before its
        first batch went. Its deltas are not sent (one signal, and the workflow task it wakes,
        saved on every quick turn); the reply says so (`ModelReply.deltas_sent`), and the
        workflow's `model_call_finished` then carries the whole text instead."""
        return self._first_announced() and not self.sent

    def piece(self, kind: str, text: str) -> None:
        """A piece of the reply as it streams (`kind`: `text` or `reasoning`)."""
        if not text or kind not in self._pieces:
            return
        self._pieces[kind].append(text)
        self._chars += len(text)
        self.due(hurry=self._chars >= BATCH_CHARS)

    def _gather(self) -> bool:
        found = False
        if not self._started and (self._chars or self._attempt > 1 or not self._closing):
            start = ModelCallRetrying if self._attempt > 1 else ModelCallStarted
            self._started = self.publish(
                start(
                    **self.base(),
                    model_call=self._model_call,
                    attempt=self._attempt,
                    model=self._model,
                    purpose=self._purpose,
                )
            )
            found = self._started
        for kind, pieces in self._pieces.items():
            if not pieces:
                continue
            delta = TextDelta if kind == "text" else ReasoningDelta
            self.publish(
                delta(
                    **self.base(),
                    model_call=self._model_call,
                    attempt=self._attempt,
                    purpose=self._purpose,
                    text="".join(pieces),
                )
            )
            pieces.clear()
            found = True
        self._chars = 0
        return found


def kept_at_close(
    *, first_announced: bool, sent: bool, reasoning_pending: bool
) -> Literal["whole", "rest", "nothing"]:
    """What a complete reply's `close` keeps back from the stream, for the workflow's
    `model_call_finished` to carry: the `whole` text when no batch went yet (a quick reply),
    the `rest` of it when one did (what gathered since, if that is only text), or `nothing`.

    Only a first attempt the workflow announced (`first_announced`) keeps anything: its
    `model_call_finished` comes from the workflow once the reply is recorded, so it can carry
    the text. A retried attempt, or a call whose start the activity published, sends it all."""
    if not first_announced:
        return "nothing"
    if not sent:
        return "whole"
    return "nothing" if reasoning_pending else "rest"


class ToolProgressEvents(ActivityEvents):
    """A tool's `ctx.progress(...)` reports: the first at once, then the latest one per batch
    (older ones in the same batch are superseded)."""

    def __init__(self, *, tool: str, call_id: str, turn: int | None) -> None:
        super().__init__(turn=turn)
        self._tool = tool
        self._call_id = call_id
        self._latest: tuple[str, float | None] | None = None
        """The report not published yet (the latest one)."""
        self._last: tuple[str, float | None] | None = None
        """The latest report, published or not (what heartbeats carry)."""

    def report(self, message: str, fraction: float | None) -> None:
        """`ctx.progress(message, fraction)`: a heartbeat carrying it (not for a local
        activity, which the server does not track) and a `tool_progress` event."""
        try:
            done = None if fraction is None else min(1.0, max(0.0, float(fraction)))
            first = self._last is None
            self._latest = self._last = (str(message), done)
            if not activity.info().is_local:
                activity.heartbeat(self.details())
            if not self.opened:
                self.open()
            self.due(hurry=first)
        except Exception as error:  # a tool's progress report never fails the tool
            self._fail("a progress report was dropped", error)

    def details(self) -> dict[str, Any] | None:
        """The heartbeat details: the latest report (None before the first)."""
        if self._last is None:
            return None
        return {"progress": self._last[0], "fraction": self._last[1]}

    def _gather(self) -> bool:
        if self._latest is None:
            return False
        message, fraction = self._latest
        self._latest = None
        return self.publish(
            ToolProgress(
                **self.base(),
                call_id=self._call_id,
                tool=self._tool,
                message=message,
                fraction=fraction,
            )
        )


def _now() -> datetime:
    return datetime.now(UTC)
