"""A workflow's events as server-sent events: `id:` the offset, `event:` the type, `data:` the
event as JSON. A client resumes with `Last-Event-ID` (what browsers send when they reconnect)
or `?after=N`: it gets every event after offset N, none twice. A run's stream ends after
`run_finished`; a session's goes on from turn to turn until the session ends, with the events
of each turn that runs as a child run in its place (`Feeds.with_child_turns`: their `id:` is
`<session offset>/<child offset>`, which `Last-Event-ID` resumes from as well)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from sse_starlette import EventSourceResponse, ServerSentEvent

from durable_agents.contracts.events import TERMINAL_EVENT_TYPES, AgentEvent
from durable_agents.servers.http_api.errors import ApiError
from durable_agents.servers.http_api.feeds import Feeds, Resume

PING_SECONDS = 15


MAX_EVENT_ID_CHARS = 41
"""The longest `Last-Event-ID` read (`N/M`, each at most 20 digits): a longer one is a 400
(Python refuses to read an integer of more than 4,300 digits, which was a 500)."""


def event_id_text(last_event_id: str) -> str:
    """The `Last-Event-ID` header, stripped; a 400 naming it when it is too long to be one."""
    text = last_event_id.strip()
    if len(text) > MAX_EVENT_ID_CHARS:
        raise ApiError(
            400,
            f"invalid Last-Event-ID: {len(text)} characters, where an event id has at most "
            f"{MAX_EVENT_ID_CHARS}",
            fields=[{"field": "Last-Event-ID", "message": "too long"}],
        )
    return text


def resume_offset(last_event_id: str | None, after: int | None) -> int:
    """The first offset to send: after `Last-Event-ID` (when given), else after `?after=N`,
    else from the start. A `Last-Event-ID` that is not an offset is a 422 naming it (a 400
    when it is too long to be one)."""
    if last_event_id is not None and last_event_id.strip():
        text = event_id_text(last_event_id)
        if not text.isdigit():
            raise ApiError(
                422,
                f"invalid input: Last-Event-ID: expected an event offset, got {text!r}",
                fields=[{"field": "Last-Event-ID", "message": "expected an integer offset"}],
            )
        return int(text) + 1
    return 0 if after is None else after + 1


def session_resume(last_event_id: str | None, after: int | None) -> Resume:
    """Where a session's stream resumes: after `Last-Event-ID` (an offset, or `N/M` inside a
    child turn), else after `?after=N`, else from the start; a 422 naming a bad id (a 400 when
    it is too long to be one)."""
    if last_event_id is not None and last_event_id.strip():
        text = event_id_text(last_event_id)
        resume = Resume.parse(text)
        if resume is None:
            raise ApiError(
                422,
                f"invalid input: Last-Event-ID: expected an event id (N or N/M), got {text!r}",
                fields=[{"field": "Last-Event-ID", "message": "expected N or N/M"}],
            )
        return resume
    return Resume(after if after is not None and after >= 0 else None)


def frame(event: AgentEvent, event_id: str | None = None) -> ServerSentEvent:
    return ServerSentEvent(
        data=event.model_dump_json(exclude_none=True),
        event=event.type,
        id=event_id if event_id is not None else str(event.offset),
    )


def failed(error: Exception) -> ServerSentEvent:
    """The stream failed (no stream on this workflow, ...): say so."""
    message = str(error) or type(error).__name__
    return ServerSentEvent(data=json.dumps({"error": message}), event="error")


async def frames(
    feeds: Feeds, workflow_id: str, start: int, *, end_at_finish: bool
) -> AsyncIterator[ServerSentEvent]:
    try:
        async for event in feeds.events(workflow_id, start):
            yield frame(event)
            if end_at_finish and event.type in TERMINAL_EVENT_TYPES:
                return
    except Exception as error:
        yield failed(error)


async def session_frames(
    feeds: Feeds, session_id: str, resume: Resume
) -> AsyncIterator[ServerSentEvent]:
    try:
        async for event_id, event in feeds.with_child_turns(session_id, resume):
            yield frame(event, event_id)
    except Exception as error:
        yield failed(error)


def respond(frames: AsyncIterator[ServerSentEvent]) -> EventSourceResponse:
    return EventSourceResponse(
        frames,
        ping=PING_SECONDS,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def event_stream(
    feeds: Feeds, workflow_id: str, start: int, *, end_at_finish: bool
) -> EventSourceResponse:
    return respond(frames(feeds, workflow_id, start, end_at_finish=end_at_finish))


def session_event_stream(feeds: Feeds, session_id: str, resume: Resume) -> EventSourceResponse:
    """A session's events, each child turn's in its place (see the module docstring)."""
    return respond(session_frames(feeds, session_id, resume))
