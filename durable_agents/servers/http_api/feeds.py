"""One subscription to a workflow's event stream, however many clients watch it.

Each poll of a `WorkflowStreamClient` subscription is an update whose completion records the
items again in the workflow's history, so `agent serve` holds ONE subscription per workflow
(`Feeds.feed`) and fans it out: every SSE or AG-UI client reads the same in-memory buffer.

- A `Feed` subscribes from the offset its first reader asks for and keeps what it read (up to
  `max_buffer` events; older ones are dropped from memory, not from the stream).
- A reader that asks for an offset the buffer does not hold (it came later, or reconnects after
  a long time) reads that part with the stream's poll *query*, which records nothing, then goes
  on from the buffer: it misses nothing and gets nothing twice.
- A run that has closed is read by the subscription itself through the same query (the SDK
  does that once the poll update finds the run closed), then the feed ends.
- A feed no one reads is dropped after `linger_seconds` (a reconnecting client finds it), or
  at once when its run has ended.

Items are `contracts.events.AgentEvent`s; their `offset` is filled in here from the stream
item's offset. Items of unknown types are skipped (a newer worker's events), as the contract says.

A session's stream names, rather than carries, the events of a turn that runs as a child run
(`turns: child`, or an inline turn that outgrew the session: `turn_started` / `turn_moved` with
`child_workflow_id`). `Feeds.with_child_turns` puts them in place, through the child's own feed
(one subscription per run still), with ids that say where each came from (`merged_id`).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field

from durable_agents.client import AgentClient, RunHandle
from durable_agents.contracts.events import (
    CHILD_TURN_EVENT_TYPES,
    TERMINAL_EVENT_TYPES,
    AgentEvent,
)
from durable_agents.runtime.event_stream import StreamReading, first_offset

log = logging.getLogger("durable_agents.servers.http_api.feeds")

MAX_BUFFER = 20_000
LINGER_SECONDS = 30.0
CHILD_START_SECONDS = 10.0
"""How long a session's merged stream waits for a child turn it names to exist (the session
starts it right after publishing the event)."""
CHILD_RETRY_SECONDS = 0.2


def child_of(event: AgentEvent) -> str | None:
    """The child run a session's event says the turn's events are on from now (a child turn,
    or an inline turn that outgrew the session), or None."""
    if event.type not in CHILD_TURN_EVENT_TYPES:
        return None
    return getattr(event, "child_workflow_id", None)


def merged_id(session_offset: int, child_offset: int | None = None) -> str:
    """The SSE `id:` of an event of a session's merged stream: the session's own offset, or,
    for an event of the child turn the session's event at `session_offset` named,
    `<session offset>/<child offset>`."""
    return str(session_offset) if child_offset is None else f"{session_offset}/{child_offset}"


@dataclass(frozen=True)
class Resume:
    """Where a client of a session's merged stream resumes: it holds the session's events up
    to `session` (None: none) and, when that event named a child turn, the child's events up
    to `child` (None: none of them)."""

    session: int | None = None
    child: int | None = None

    @classmethod
    def parse(cls, text: str) -> Resume | None:
        """`N` or `N/M` (what `merged_id` writes); None when `text` is neither."""
        session, _, child = text.partition("/")
        if not session.isdigit() or (child and not child.isdigit()) or text.endswith("/"):
            return None
        return cls(int(session), int(child) if child else None)


@dataclass(eq=False)
class Feed:
    """The events of one workflow as read by its one subscription (see the module docstring)."""

    run: RunHandle
    base: int
    """Every event at an offset >= `base` is in `events` or still to come."""
    max_buffer: int = MAX_BUFFER
    reading: StreamReading = "query"
    events: list[AgentEvent] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    done: bool = False
    error: BaseException | None = None
    readers: int = 0
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._pump(), name=f"feed {self.run.id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _pump(self) -> None:
        try:
            async for event in self.run.follow(after=self.base - 1, reading=self.reading):
                self._add(event)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.info("the event stream of %s ended: %s", self.run.id, error)
            self.error = error
        finally:
            self.done = True
            self._notify()

    def _add(self, event: AgentEvent) -> None:
        assert event.offset is not None
        self.events.append(event)
        self.offsets.append(event.offset)
        if len(self.events) > self.max_buffer:
            drop = len(self.events) - self.max_buffer
            self.base = self.offsets[drop - 1] + 1
            del self.events[:drop], self.offsets[:drop]
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def read(self, start: int) -> AsyncIterator[AgentEvent]:
        """Every event from offset `start` on, until the stream ends (raises what ended it, if
        it was an error)."""
        position = start
        while True:
            if position < self.base:
                async for event in self.run.read_range(position, self.base):
                    assert event.offset is not None
                    position = event.offset + 1
                    yield event
                position = max(position, self.base)
                continue
            changed = self._changed
            index = bisect.bisect_left(self.offsets, position)
            fresh = self.events[index:]
            for event in fresh:
                assert event.offset is not None
                position = event.offset + 1
                yield event
            if fresh:
                continue
            if self.done:
                if self.error is not None:
                    raise self.error
                return
            await changed.wait()


class Feeds:
    """The server's feeds, one per workflow id."""

    def __init__(
        self,
        agents: AgentClient,
        *,
        max_buffer: int = MAX_BUFFER,
        linger_seconds: float = LINGER_SECONDS,
        reading: StreamReading = "query",
    ) -> None:
        self.agents = agents
        self.reading = reading
        self.max_buffer = max_buffer
        self.linger_seconds = linger_seconds
        self._feeds: dict[str, Feed] = {}
        self._reapers: set[asyncio.Task[None]] = set()

    def active(self, workflow_id: str) -> Feed | None:
        return self._feeds.get(workflow_id)

    async def events(self, workflow_id: str, start: int = 0) -> AsyncGenerator[AgentEvent, None]:
        """The workflow's events from offset `start`, through its one feed."""
        feed = self._feeds.get(workflow_id)
        if feed is None or (feed.done and feed.error is not None):
            # The feed starts where this reader does, but never past the stream's end: a
            # reader that asks for a later offset waits for it in the feed, and decides
            # nothing about what the others get.
            end = await self.agents.run(workflow_id).stream_offset()
            feed = self._feeds.get(workflow_id)
            if feed is None or (feed.done and feed.error is not None):
                base = min(start, end)
                feed = Feed(
                    self.agents.run(workflow_id),
                    base=base,
                    max_buffer=self.max_buffer,
                    reading=self.reading,
                )
                self._feeds[workflow_id] = feed
                feed.start()
        feed.readers += 1
        try:
            async for event in feed.read(start):
                yield event
        finally:
            feed.readers -= 1
            if feed.readers == 0:
                self._reap_later(feed)

    async def with_child_turns(
        self, session_id: str, resume: Resume = Resume()
    ) -> AsyncGenerator[tuple[str, AgentEvent], None]:
        """A session's events with each child turn's events in its place: after the session's
        `turn_started` / `turn_moved` that names a child run, that run's events up to its
        `run_finished` (or `run_failed`, or its end), then the session's again; each with its
        `merged_id`. A client resuming after an event it holds (`Resume`) misses nothing and
        gets nothing twice, inside a child turn too."""
        if resume.session is not None:  # it may hold only part of the child turn named there
            pointers = self.agents.run(session_id).read_range(resume.session, resume.session + 1)
            async for pointer in pointers:
                child = child_of(pointer)
                if child is not None:
                    async for pair in self._child_turn(resume.session, child, resume.child):
                        yield pair
        async for event in self.events(session_id, first_offset(resume.session)):
            assert event.offset is not None
            yield merged_id(event.offset), event
            child = child_of(event)
            if child is not None:
                async for pair in self._child_turn(event.offset, child, None):
                    yield pair

    async def _child_turn(
        self, pointer: int, child_id: str, after: int | None
    ) -> AsyncGenerator[tuple[str, AgentEvent], None]:
        """The child turn's events after `after`, through its own feed, until its end. A child
        that is not there yet is waited for (up to `CHILD_START_SECONDS`); one that never
        comes is logged and skipped: the session's stream goes on."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CHILD_START_SECONDS
        while True:
            try:
                async for event in self.events(child_id, first_offset(after)):
                    after = event.offset
                    yield merged_id(pointer, event.offset), event
                    if event.type in TERMINAL_EVENT_TYPES:
                        return
                return
            except Exception as error:  # no such run yet (or its stream failed): try again
                if after is not None or loop.time() >= deadline:
                    log.warning("the events of child turn %s are not followed: %s", child_id, error)
                    return
                await asyncio.sleep(CHILD_RETRY_SECONDS)

    def _reap_later(self, feed: Feed) -> None:
        async def reap() -> None:
            if not feed.done:
                await asyncio.sleep(self.linger_seconds)
            if feed.readers == 0 and self._feeds.get(feed.run.id) is feed:
                del self._feeds[feed.run.id]
                await feed.stop()

        task = asyncio.create_task(reap())
        self._reapers.add(task)
        task.add_done_callback(self._reapers.discard)

    async def close(self) -> None:
        for task in list(self._reapers):
            task.cancel()
        for feed in list(self._feeds.values()):
            await feed.stop()
        self._feeds.clear()
