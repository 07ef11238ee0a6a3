"""`RunEvents`: how workflow code publishes a run's or a session's events (`contracts.events`) on
its `temporalio.contrib.workflow_streams.WorkflowStream`, topic `events`.

The stream is built in the workflow's `@workflow.init` `__init__` (the SDK checks the caller),
from the state the previous run carried across continue-as-new (`carried_stream_state`):

    self.stream = WorkflowStream(prior_state=carried_stream_state(raw_input))
    self.events = RunEvents(self.stream)

Publishing in workflow code appends to the stream's log in workflow memory: no command, no
history event, and replay rebuilds the same log in the same order (events from activities
arrive as the stream's signals, which history keeps). A subscriber's poll is an update whose
completion records the items it returns; that is the stream's only history cost besides the
activities' batches.

An event that cannot be built (a bug) is logged and dropped: an event never fails a run.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.contrib.workflow_streams import (
    PublishInput,
    WorkflowStream,
    WorkflowStreamState,
)
from temporalio.contrib.workflow_streams._types import _decode_payload

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.events import (
        ACTIVITY_EVENT_TYPES,
        AGENT_EVENT,
        EVENTS_TOPIC,
        EventBase,
        ModelCallFinished,
        ModelCallStarted,
        ToolCallFinished,
        ToolCallStarted,
    )
    from durable_agents.contracts.stream_state import read_stream_state
    from durable_agents.workflows.input_guard import STREAM_PUBLISH_SIGNAL
    from durable_agents.workflows.refusals import read_payload

E = TypeVar("E", bound=EventBase)

POLL_HANDLER = "__temporal_workflow_stream_poll"
"""The stream's long-poll update: a subscriber waiting, not work of the run's own."""
CARRIED_EVENTS = 100
CARRIED_BYTES = 16 * 1024
"""At most this many of the newest events, of at most this many bytes, go to a continued run."""
CARRIED_PUBLISHERS = 20
"""The de-duplication state of at most this many publishers (the latest seen) goes along: an
activity's retried batch arrives within seconds, and every model call publishes as one."""
PROGRESS_SCAN = 2_000
"""How far back (items) `progress_of` looks for a running call's latest `tool_progress`."""
PROGRESS_KEPT = 256
"""The latest progress of at most this many calls is kept (those that reported last)."""


def carried_stream_state(raw_input: Any) -> WorkflowStreamState | None:
    """The stream state a continued run's input carries (its `stream` field), or None: on a
    fresh start (a client cannot hand a run a stream), or when the input cannot be read (the
    run refuses it later, naming the problem; an unreadable state only costs the old events)."""
    if workflow.info().continued_run_id is None:
        return None
    try:
        payload = read_payload(raw_input, max_bytes=None, missing={})
        return read_stream_state(payload.get("stream") if isinstance(payload, dict) else None)
    except Exception as error:  # never fail the workflow task over old events
        workflow.logger.warning("the carried event stream could not be read: %s", error)
        return None


def handlers_finished_but_polls() -> bool:
    """Whether every signal and update handler has finished except the stream's waiting polls
    (subscribers): what a workflow checks before it may continue-as-new. With no subscriber
    this is `workflow.all_handlers_finished()`."""
    if workflow.all_handlers_finished():
        return True
    instance: Any = workflow._Runtime.current()  # the SDK's own bookkeeping of handlers
    updates = getattr(instance, "_in_progress_updates", None)
    signals = getattr(instance, "_in_progress_signals", None)
    if not isinstance(updates, dict) or not isinstance(signals, dict):
        return False
    return not signals and all(h.name == POLL_HANDLER for h in updates.values())


class PublishGuard:
    """What a run takes from its stream's publish signal: only events its own activities
    publish (`ACTIVITY_EVENT_TYPES`: a model call's retried start and its text, a tool's
    progress), for this workflow, about a model call or a tool call the workflow has started and
    not yet finished. Anything else (a forged `approval_requested` or `run_finished`, text for
    a call that is not running, another topic) is refused: logged, and never in the stream.

    Anyone who can signal a run can send the signal; what they cannot do is make the run's
    workflow publish: every other event comes from workflow code, which appends to the stream
    without a signal. A publisher token handed to the activities would not help: an activity's
    input is in the run's history, readable by whoever can signal it. (Publishing is no
    command and adds no history event, so refusing an item changes nothing on replay.)"""

    def __init__(self) -> None:
        self._publish = workflow.get_signal_handler(STREAM_PUBLISH_SIGNAL)
        self._model_calls: set[tuple[int, str]] = set()
        self._tool_calls: set[str] = set()
        workflow.set_signal_handler(STREAM_PUBLISH_SIGNAL, self.on_publish)

    def saw(self, event: EventBase) -> None:
        """The workflow published `event`: a call it names starts or ends."""
        if isinstance(event, ModelCallStarted):
            self._model_calls.add((event.model_call, event.purpose))
        elif isinstance(event, ModelCallFinished):
            self._model_calls.discard((event.model_call, event.purpose))
        elif isinstance(event, ToolCallStarted) and event.call_id is not None:
            self._tool_calls.add(event.call_id)
        elif isinstance(event, ToolCallFinished) and event.call_id is not None:
            self._tool_calls.discard(event.call_id)

    def on_publish(self, batch: PublishInput) -> None:
        """The stream's publish signal: the batch's admitted items go to the stream's own
        handler (de-duplicated there by publisher and sequence); the rest are logged."""
        kept = [entry for entry in batch.items if self._admits(entry.topic, entry.data)]
        if len(kept) < len(batch.items):
            workflow.logger.warning(
                "%d of %d stream items from publisher %r refused: not an event this run's "
                "activities publish about a call that is running",
                len(batch.items) - len(kept),
                len(batch.items),
                batch.publisher_id,
            )
        if kept and self._publish is not None:
            batch.items = kept
            self._publish(batch)

    def _admits(self, topic: str, data: str) -> bool:
        if topic != EVENTS_TOPIC:
            return False
        try:
            value = workflow.payload_converter().from_payload(_decode_payload(data))
            event = AGENT_EVENT.validate_python(value)
        except Exception:
            return False
        if event.type not in ACTIVITY_EVENT_TYPES:
            return False
        if event.workflow_id != workflow.info().workflow_id:
            return False
        model_call = getattr(event, "model_call", None)
        if model_call is not None:
            return (model_call, getattr(event, "purpose", "turn")) in self._model_calls
        return event.call_id is not None and event.call_id in self._tool_calls


class RunEvents:
    """Publishes events for one run or one session turn (`turn`) on a workflow's stream, and
    guards what the stream takes from its publish signal (`PublishGuard`)."""

    def __init__(
        self,
        stream: WorkflowStream | None,
        turn: int | None = None,
        guard: PublishGuard | None = None,
    ) -> None:
        self._stream = stream
        self._topic = stream.topic(EVENTS_TOPIC) if stream is not None else None
        if guard is None and stream is not None:
            guard = PublishGuard()  # (in `@workflow.init`, where the stream is built)
        self._guard = guard
        self.turn = turn
        """The session turn the events carry (None: not a session's turn)."""
        self._progress: dict[str, tuple[str, float | None]] = {}
        self._progress_read = 0
        """The latest progress of running calls, and the log offset `progress_of` read to."""

    @classmethod
    def off(cls) -> RunEvents:
        """Events that go nowhere (a loop hosted without a stream)."""
        return cls(None)

    def for_turn(self, turn: int | None) -> RunEvents:
        """The same stream, for a session's turn `turn`."""
        return RunEvents(self._stream, turn, self._guard)

    def emit(self, kind: type[E], /, **fields: Any) -> None:
        """Publish one event of `kind`; `workflow_id`, `at` (workflow time) and `turn` are
        filled in unless given."""
        if self._topic is None:
            return
        try:
            fields.setdefault("workflow_id", workflow.info().workflow_id)
            fields.setdefault("at", workflow.now())
            fields.setdefault("turn", self.turn)
            event = kind(**fields)
            self._topic.publish(event)
            if self._guard is not None:
                self._guard.saw(event)
        except Exception as error:  # an event never fails a run (or its workflow task)
            workflow.logger.warning("event %s not published: %s", kind.__name__, error)

    # -- continue-as-new and the end --------------------------------------------------------

    def state(self) -> WorkflowStreamState | None:
        """What the next run takes (`prior_state`), after `detach`: the stream's offsets and
        publishers, and only the newest events (`CARRIED_EVENTS`, `CARRIED_BYTES`). Carrying
        the whole log (or every publisher's de-duplication state: `CARRIED_PUBLISHERS`) would
        put every event the run ever published into each continued run's input, so a long
        session's history would grow with its age; a follower carries on from
        its offset, and one that fell further behind than the carried tail resumes at the
        oldest event kept (the stream's truncated-offset rule)."""
        if self._stream is None:
            return None
        self._keep_newest()
        state = self._stream.get_state()
        if len(state.publishers) > CARRIED_PUBLISHERS:  # (each model call is a publisher)
            newest = sorted(state.publishers.items(), key=lambda p: p[1].last_seen)
            state.publishers = dict(newest[-CARRIED_PUBLISHERS:])
        return state

    def _keep_newest(self) -> None:
        assert self._stream is not None
        log = getattr(self._stream, "_log", None)
        base = getattr(self._stream, "_base_offset", None)
        if not isinstance(log, list) or not isinstance(base, int):
            return
        kept = size = 0
        for item in reversed(log):
            size += item.data.ByteSize()
            if kept >= CARRIED_EVENTS or size > CARRIED_BYTES:
                break
            kept += 1
        if kept < len(log):
            self._stream.truncate(base + len(log) - kept)

    def detach(self) -> None:
        """Release waiting subscribers (they follow to the next run, or read the closed run
        by query) and refuse new polls on this run."""
        if self._stream is not None:
            self._stream.detach_pollers()

    async def close(self) -> None:
        """Before the workflow returns or continues-as-new: release the subscribers and wait
        until every handler has finished."""
        self.detach()
        await workflow.wait_condition(workflow.all_handlers_finished)

    # -- what the status shows of running calls ---------------------------------------------

    def progress_of(self, call_ids: set[str]) -> dict[str, tuple[str, float | None]]:
        """The latest `tool_progress` (message, fraction) of each of `call_ids` in the stream
        (published by their activities); read when `status` asks.

        `status` is read at every change of a run, so this reads each item of the log once:
        it keeps the latest progress of each call and goes on from where it stopped, at most
        `PROGRESS_SCAN` items back; only an item that names `tool_progress` is decoded."""
        log = getattr(self._stream, "_log", None)
        base = getattr(self._stream, "_base_offset", None)
        if not call_ids or not isinstance(log, list) or not isinstance(base, int):
            return {}
        end = base + len(log)
        start = max(self._progress_read, base, end - PROGRESS_SCAN)
        converter = workflow.payload_converter()
        for item in log[start - base :]:
            if item.topic != EVENTS_TOPIC or b"tool_progress" not in item.data.data:
                continue
            try:
                event = converter.from_payload(item.data)
                if isinstance(event, str | bytes):
                    event = json.loads(event)
            except Exception:
                continue
            if not isinstance(event, dict) or event.get("type") != "tool_progress":
                continue
            fraction = event.get("fraction")
            call_id = str(event.get("call_id"))
            self._progress.pop(call_id, None)  # (the newest last: the oldest go first)
            self._progress[call_id] = (
                str(event.get("message", "")),
                float(fraction) if isinstance(fraction, int | float) else None,
            )
        self._progress_read = end
        while len(self._progress) > PROGRESS_KEPT:
            del self._progress[next(iter(self._progress))]
        return {k: v for k, v in self._progress.items() if k in call_ids}
