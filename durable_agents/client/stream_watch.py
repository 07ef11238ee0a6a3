"""Following a workflow's event stream by query, and when to ask its `status` again: what the
CLI's live view and the servers' followers (`RunHandle.follow`) share.

`StreamWatch` reads the stream through its poll *query* (nothing recorded in the workflow's
history, unlike a subscription's update polls); `StatusDue` says when a follower asks for the
`status` again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from temporalio.client import RPCTimeoutOrCancelledError, WorkflowHandle, WorkflowQueryFailedError
from temporalio.service import RPCError

from durable_agents.client.connection import QUERY_TIMEOUT
from durable_agents.contracts.events import AgentEvent
from durable_agents.runtime.event_stream import OFFSET_QUERY, read_handle_events

STATUS_BACKSTOP_SECONDS = 3.0
"""With the stream quiet, the status is still asked this often (a session's child turn, whose
events are on the child's own stream, changes the session's state without an event)."""
LIVE_EVENT_TYPES = frozenset(
    {"model_call_started", "model_call_retrying", "text_delta", "reasoning_delta"}
)
"""Events that only the live text shows: no reason to ask for the status."""


@dataclass
class StreamWatch:
    """A workflow's event stream, read through the stream's poll query (nothing is recorded in
    the workflow's history, unlike a subscription's update polls): what is new at each look."""

    handle: WorkflowHandle[Any, Any]
    from_start: bool = False
    """Read from the stream's first event, not from where it ended when the watch began."""
    after: int | None = None
    streamed: bool | None = None
    """Whether the workflow has a stream (None: not known yet; False: a run from before it)."""

    async def news(self) -> list[AgentEvent] | None:
        """The events since the last look; None when the workflow has no stream or no worker
        answered this time."""
        if self.streamed is False:
            return None
        try:
            if self.streamed is None and not self.from_start:
                end: int = await self.handle.query(
                    OFFSET_QUERY, result_type=int, rpc_timeout=QUERY_TIMEOUT
                )
                self.after = end - 1 if end > 0 else None
            events, _ = await read_handle_events(self.handle, after=self.after)
        except WorkflowQueryFailedError as error:
            if self.streamed is None and "unknown" in str(error).lower():
                self.streamed = False  # a run from before the stream: its status alone
            return None
        except (RPCError, RPCTimeoutOrCancelledError):
            return None
        self.streamed = True
        if events:
            self.after = events[-1].offset
        return events


@dataclass
class StatusDue:
    """When a follower asks for the `status` again: at its first look, whenever the stream
    showed something besides the model's text (or could not be read), and at least every
    `STATUS_BACKSTOP_SECONDS` (a session's child turn changes the session's state without an
    event on the session's stream)."""

    at: float = 0.0

    def now(self, news: list[AgentEvent] | None, *, new_turn: bool = False) -> bool:
        """`new_turn`: the news start a turn, whose header comes from the status."""
        clock = asyncio.get_running_loop().time()
        changed = new_turn or news is None or any(e.type not in LIVE_EVENT_TYPES for e in news)
        if not changed and clock < self.at:
            return False
        self.at = clock + STATUS_BACKSTOP_SECONDS
        return True
