"""Reading a run's or a session's event stream from a client (`agent serve`, the CLI, an
application with a Temporal client of its own).

- `follow_events(client, workflow_id, after=N)`: every event after offset N (all of them
  without `after`), live, as typed `AgentEvent`s with `offset` filled in; it follows
  continue-as-new, and ends when the workflow has closed and its last events are read, or
  after an event whose type is in `stop_at`. A workflow that closed without its own final
  event (terminated, timed out, or failed before it could say so) ends with a `run_failed`
  made from its close status, marked `synthesized` (`closing_event`).
- `read_events(client, workflow_id, after=N)`: the events retained now, at once (a query: it
  adds nothing to the run's history, and works on a closed run while its history is kept).

Offsets are the stream's: each event's position, counted from 0 across continue-as-new.
Resuming after the last offset a client holds (`Last-Event-ID`) gives every later event once.

Cost: both read through the stream's poll *query*, which records nothing in the workflow's
history. (The stream's own subscription, `WorkflowStreamClient.subscribe`, long-polls with an
update whose completion records the events it returns again, and each poll shows in the Web
UI's timeline: two short session turns followed that way left 72 events in the session's
history against 38 unfollowed; docs/events.md has the figures.) A query follower looks whenever
the workflow's history grew (`HistoryTicks`), at most every `POLL_COOLDOWN`, at least every
`IDLE_POLL`; `by="updates"` follows with the update instead. `agent serve` holds ONE follower
per run and fans it out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Collection
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import ValidationError
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
)
from temporalio.common import QueryRejectCondition, RawValue
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.contrib.workflow_streams import PollInput, PollResult, WorkflowStreamClient
from temporalio.contrib.workflow_streams._types import _decode_payload
from temporalio.converter import PayloadConverter
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.contracts.events import (
    AGENT_EVENT,
    EVENTS_TOPIC,
    SESSION_TERMINAL_EVENT_TYPES,
    TERMINAL_EVENT_TYPES,
    AgentEvent,
    RunFailed,
    RunOutcome,
)

logger = logging.getLogger(__name__)

POLL_QUERY = "__temporal_workflow_stream_poll"
OFFSET_QUERY = "__temporal_workflow_stream_offset"
"""The stream's query for the offset the next event will have (the events so far)."""
POLL_COOLDOWN = timedelta(milliseconds=40)
"""The least time between two looks of a query follower (it looks when the history grew)."""
IDLE_POLL = timedelta(seconds=2)
"""The longest time between two looks of a query follower (a backstop: it looks whenever the
workflow's history grew, `HistoryTicks`)."""
SESSION_WORKFLOW_TYPE = "SessionWorkflow"
TRANSIENT_RPC_STATUSES = frozenset(
    {
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.RESOURCE_EXHAUSTED,
        RPCStatusCode.ABORTED,
        RPCStatusCode.INTERNAL,
        RPCStatusCode.UNKNOWN,
    }
)
"""Errors a follower waits out (no worker answered the query in time, the server is
restarting); any other (no such workflow) ends it."""


def as_event(data: Any, offset: int) -> AgentEvent | None:
    """One stream item as an `AgentEvent` carrying its offset; None for an item this reader
    does not know (a newer event type: readers skip those)."""
    try:
        event = AGENT_EVENT.validate_python(data)
    except ValidationError:
        logger.debug("skipping stream item %d: not an event this reader knows", offset)
        return None
    return event.model_copy(update={"offset": offset})


def first_offset(after: int | None) -> int:
    """Where reading starts for a client that holds every event up to `after`."""
    return 0 if after is None else after + 1


StreamReading = Literal["query", "updates"]
"""How a follower reads a stream: `query` (the stream's poll query, with a backoff: nothing in
the run's history) or `updates` (the stream's long-poll update: lower latency under load, but
every poll is in the run's history and its Web UI timeline)."""


async def follow_events(
    client: Client,
    workflow_id: str,
    *,
    after: int | None = None,
    stop_at: Collection[str] = (),
    by: StreamReading = "query",
    poll_cooldown: timedelta = POLL_COOLDOWN,
    idle_poll: timedelta = IDLE_POLL,
) -> AsyncIterator[AgentEvent]:
    """The events of `workflow_id` after offset `after`, live (see the module docstring).

    Read `by` the stream's poll query (`poll_cooldown` after a look that found events, the
    wait doubling up to `idle_poll` while nothing comes: nothing is recorded in the workflow's
    history) or its long-poll updates. An offset past the stream's end waits for that offset.
    When the workflow has closed (the last run of its continue-as-new chain) and its last
    events are read, a run that published no final event gets one made from its close status
    (`closing_event`)."""
    position = first_offset(after)
    if by == "updates":
        source = _by_updates(client, workflow_id, position, poll_cooldown)
    else:
        source = _by_query(client, workflow_id, position, poll_cooldown, idle_poll)
    async with contextlib.aclosing(source):
        async for event in source:
            yield event
            if event.type in stop_at:
                return


class HistoryTicks:
    """Wakes a query follower when the workflow's history grows: a long poll of its history
    on the server (`wait_new_event`), which needs no worker and records nothing. A stream
    changes only in a workflow task (workflow code publishes there; an activity's batch is a
    signal, then a task), so a look after each completed task misses nothing, and a quiet
    run costs no look but the `idle` backstop."""

    def __init__(self, client: Client, workflow_id: str, idle: timedelta) -> None:
        self._client = client
        self._workflow_id = workflow_id
        self._idle = idle
        self._grew = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> HistoryTicks:
        self._task = asyncio.create_task(self._watch(), name=f"history of {self._workflow_id}")
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _watch(self) -> None:
        while True:  # each run of the chain (the handle names none: the latest)
            handle = self._client.get_workflow_handle(self._workflow_id)
            try:
                async for event in handle.fetch_history_events(
                    wait_new_event=True, skip_archival=True
                ):
                    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                        self._grew.set()
            except Exception as error:  # (no such run yet, a server restart: look later)
                logger.debug("the history of %s is not watched: %s", self._workflow_id, error)
            self._grew.set()  # (a run closed or continued: look now)
            await asyncio.sleep(self._idle.total_seconds())

    async def next(self) -> None:
        """Until the history grew since the last call, or `idle` passed."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._grew.wait(), self._idle.total_seconds())
        self._grew.clear()


async def _by_query(
    client: Client, workflow_id: str, position: int, cooldown: timedelta, idle: timedelta
) -> AsyncGenerator[AgentEvent, None]:
    """`follow_events` by the stream's poll query: a look whenever the history grew (at most
    one every `cooldown`), and at least every `idle`."""
    handle = client.get_workflow_handle(workflow_id)
    converter = client.data_converter.payload_converter
    last: AgentEvent | None = None
    loop = asyncio.get_running_loop()
    async with HistoryTicks(client, workflow_id, idle) as ticks:
        while True:
            looked = loop.time()
            try:
                events, next_offset = await read_handle_events(
                    handle,
                    after=position - 1 if position > 0 else None,
                    payload_converter=converter,
                    open_only=True,
                )
            except WorkflowQueryRejectedError as closed:
                if closed.status == WorkflowExecutionStatus.CONTINUED_AS_NEW:
                    continue  # (the next run is there already: the handle names no run)
                async for event in _drain_closed(client, workflow_id, position, last):
                    yield event
                return
            except (RPCError, RPCTimeoutOrCancelledError) as error:
                if isinstance(error, RPCError) and error.status not in TRANSIENT_RPC_STATUSES:
                    raise
                logger.info("the stream of %s did not answer (%s): again", workflow_id, error)
                events, next_offset = [], position  # (no worker, or a server restart)
            except WorkflowQueryFailedError as error:
                # Seen once in CI: a query that reached the run as it continued as new failed
                # in the worker's replay ("Activity machine does not handle this event:
                # WorkflowExecutionContinuedAsNew"), which ended the stream without its final
                # event. The next look asks the latest run; a run whose queries keep failing
                # keeps its stream open, as one with no worker does.
                logger.warning("the stream query of %s failed (%s): again", workflow_id, error)
                events, next_offset = [], position
            for event in events:
                assert event.offset is not None
                position = event.offset + 1
                last = event
                yield event
            position = max(position, next_offset)
            await ticks.next()
            await asyncio.sleep(max(0.0, cooldown.total_seconds() - (loop.time() - looked)))


async def _by_updates(
    client: Client, workflow_id: str, position: int, cooldown: timedelta
) -> AsyncGenerator[AgentEvent, None]:
    """`follow_events` by the stream's long-poll updates (`WorkflowStreamClient.subscribe`,
    which reads a closed run's rest by query and ends), then the final event a run that
    closed without one gets."""
    stream = WorkflowStreamClient.create(client, workflow_id)
    converter = client.data_converter.payload_converter
    last: AgentEvent | None = None
    async for item in stream.subscribe(
        [EVENTS_TOPIC],
        from_offset=position,
        poll_cooldown=cooldown,
        result_type=RawValue,  # decoded here: an item that does not decode is skipped
    ):
        try:
            event = as_event(converter.from_payload(item.data.payload), item.offset)
        except Exception:
            logger.debug("skipping stream item %d: it does not decode", item.offset)
            continue
        if event is not None:
            last = event
            yield event
    final = await closing_event(
        client, workflow_id, last, max(position, await stream_end(client, workflow_id))
    )
    if final is not None:
        yield final


async def _drain_closed(
    client: Client, workflow_id: str, position: int, last: AgentEvent | None
) -> AsyncGenerator[AgentEvent, None]:
    """A closed workflow's events from `position` (a query on the closed run), then the final
    event it did not publish, if any."""
    handle = client.get_workflow_handle(workflow_id)
    converter = client.data_converter.payload_converter
    while True:
        events, next_offset = await read_handle_events(
            handle, after=position - 1 if position > 0 else None, payload_converter=converter
        )
        for event in events:
            assert event.offset is not None
            position = event.offset + 1
            last = event
            yield event
        if next_offset <= position:
            break
        position = next_offset
    final = await closing_event(client, workflow_id, last, max(position, next_offset))
    if final is not None:
        yield final


CLOSE_OUTCOMES: dict[WorkflowExecutionStatus, RunOutcome] = {
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.CANCELED: "cancelled",
    WorkflowExecutionStatus.TERMINATED: "terminated",
    WorkflowExecutionStatus.TIMED_OUT: "timed_out",
}
"""The close statuses of a workflow that did not finish, as a `run_failed` names them."""


def ends_stream(event: AgentEvent | None, workflow_type: str) -> bool:
    """Whether `event`, the last of a closed workflow's stream, is that workflow's own final
    event: `session_ended` for a session, `run_finished` / `run_failed` for a run."""
    if event is None:
        return False
    if workflow_type == SESSION_WORKFLOW_TYPE:
        return event.type in SESSION_TERMINAL_EVENT_TYPES
    return event.type in TERMINAL_EVENT_TYPES


async def closing_event(
    client: Client, workflow_id: str, last: AgentEvent | None, offset: int
) -> RunFailed | None:
    """The `run_failed` (`synthesized`, at `offset`: the stream's end) of a closed workflow
    that did not fail, cancel, get terminated or time out after publishing its own final event
    (`last` is the last event of its stream); None when it did, or when it completed."""
    handle = client.get_workflow_handle(workflow_id)
    description = await handle.describe()
    status = description.status
    outcome = CLOSE_OUTCOMES.get(status) if status is not None else None
    if status is None or outcome is None or ends_stream(last, description.workflow_type):
        return None
    error = f"the run was {outcome.replace('_', ' ')}"
    try:
        await handle.result(follow_runs=False)
    except WorkflowFailureError as failure:
        cause = failure.cause
        detail = getattr(cause, "message", "") or str(cause)
        if detail and detail not in error:
            error = f"{error}: {detail}"
    except Exception as problem:  # (the reason is only a detail)
        logger.debug("the close of %s could not be read: %s", workflow_id, problem)
    return RunFailed(
        workflow_id=workflow_id,
        at=description.close_time or datetime.now(UTC),
        offset=offset,
        error=error,
        error_type=status.name,
        cancelled=outcome == "cancelled",
        outcome=outcome,
        synthesized=True,
    )


async def stream_end(client: Client, workflow_id: str) -> int:
    """The offset the stream's next event will have (how many it has had): a query, on an open
    or a closed workflow."""
    handle = client.get_workflow_handle(workflow_id)
    end: int = await handle.query(OFFSET_QUERY, result_type=int)
    return end


async def read_events(
    client: Client, workflow_id: str, *, after: int | None = None, run_id: str | None = None
) -> tuple[list[AgentEvent], int]:
    """The events retained now after offset `after`, and the offset to read from next (a
    query: nothing is recorded; the answer is capped near 1 MB, read again from the returned
    offset for the rest)."""
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    return await read_handle_events(
        handle, after=after, payload_converter=client.data_converter.payload_converter
    )


PageReader = Callable[[int | None], Awaitable[tuple[list[AgentEvent], int]]]
"""One look at a stream: the events after an offset (None: from the first) and the offset to
read from next (`read_events`, `read_handle_events`)."""


async def read_range(
    read_page: PageReader, start: int = 0, end: int | None = None
) -> AsyncIterator[AgentEvent]:
    """The events at offsets `start` <= offset < `end` (None: up to the stream's end now), page
    after page of `read_page` (an answer is capped near 1 MB: read on from where it stopped)."""
    position = start
    while end is None or position < end:
        events, next_offset = await read_page(position - 1 if position else None)
        for event in events:
            assert event.offset is not None
            if end is not None and event.offset >= end:
                return
            yield event
        if next_offset <= position:
            return
        position = next_offset


async def read_handle_events(
    handle: WorkflowHandle[Any, Any],
    *,
    after: int | None = None,
    payload_converter: PayloadConverter = pydantic_data_converter.payload_converter,
    open_only: bool = False,
) -> tuple[list[AgentEvent], int]:
    """`read_events` through a handle the caller holds (the CLI's): the stream's items are
    encoded by the payload converter alone (the codec runs on the whole answer). With
    `open_only`, a closed workflow is not read: `WorkflowQueryRejectedError` names its status."""
    result = await handle.query(
        POLL_QUERY,
        PollInput(topics=[EVENTS_TOPIC], from_offset=first_offset(after)),
        result_type=PollResult,
        reject_condition=QueryRejectCondition.NOT_OPEN if open_only else None,
    )
    events = []
    for wire in result.items:
        try:
            data = payload_converter.from_payload(_decode_payload(wire.data))
        except Exception:  # anyone who can signal the run can publish an item: skip junk
            logger.debug("skipping stream item %d: it does not decode", wire.offset)
            continue
        event = as_event(data, wire.offset)
        if event is not None:
            events.append(event)
    return events, result.next_offset
