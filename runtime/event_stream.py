"""Reading a run's or a session's event stream from a client (`agent serve`, the CLI, an
application with a Temporal client of its own).

- `follow_events(client, workflow_id, after=N)`: every event after offset N (all of them
  without `after`), live, as typed `AgentEvent`s with `offset` filled in; it follows
  continue-as-new, and ends when the workflow has closed and its last events are read, or
  after an event whose type is in `stop_at`.
- `read_events(client, workflow_id, after=N)`: the events retained now, at once (a query: it
  adds nothing to the run's history, and works on a closed run while its history is kept).

Offsets are the stream's: each event's position, counted from 0 across continue-as-new.
Resuming after the last offset a client holds (`Last-Event-ID`) gives every later event once.

Cost: `follow_events` long-polls with an update, and each update's completion records the
events it returns in the run's history again. Hold ONE follower per run and fan out behind it
(as `agent serve` does); use `read_events` for a look that must cost nothing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Collection
from datetime import timedelta
from typing import Any

from pydantic import ValidationError
from temporalio.client import Client, WorkflowHandle
from temporalio.common import RawValue
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.contrib.workflow_streams import PollInput, PollResult, WorkflowStreamClient
from temporalio.contrib.workflow_streams._types import _decode_payload
from temporalio.converter import PayloadConverter

from contracts.events import AGENT_EVENT, EVENTS_TOPIC, AgentEvent

logger = logging.getLogger(__name__)

POLL_QUERY = "__temporal_workflow_stream_poll"
OFFSET_QUERY = "__temporal_workflow_stream_offset"
"""The stream's query for the offset the next event will have (the events so far)."""
POLL_COOLDOWN = timedelta(milliseconds=100)
"""The least time between two polls of a follower that has caught up."""


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


async def follow_events(
    client: Client,
    workflow_id: str,
    *,
    after: int | None = None,
    stop_at: Collection[str] = (),
    poll_cooldown: timedelta = POLL_COOLDOWN,
) -> AsyncIterator[AgentEvent]:
    """The events of `workflow_id` after offset `after`, live (see the module docstring)."""
    stream = WorkflowStreamClient.create(client, workflow_id)
    converter = client.data_converter.payload_converter
    async for item in stream.subscribe(
        [EVENTS_TOPIC],
        from_offset=first_offset(after),
        poll_cooldown=poll_cooldown,
        result_type=RawValue,  # decoded here: an item that does not decode is skipped
    ):
        try:
            data = converter.from_payload(item.data.payload)
        except Exception:
            logger.debug("skipping stream item %d: it does not decode", item.offset)
            continue
        event = as_event(data, item.offset)
        if event is None:
            continue
        yield event
        if event.type in stop_at:
            return


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


async def read_handle_events(
    handle: WorkflowHandle[Any, Any],
    *,
    after: int | None = None,
    payload_converter: PayloadConverter = pydantic_data_converter.payload_converter,
) -> tuple[list[AgentEvent], int]:
    """`read_events` through a handle the caller holds (the CLI's): the stream's items are
    encoded by the payload converter alone (the codec runs on the whole answer)."""
    result = await handle.query(
        POLL_QUERY,
        PollInput(topics=[EVENTS_TOPIC], from_offset=first_offset(after)),
        result_type=PollResult,
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
