"""The worker's side of cache affinity (docs/fleet.md): whether its server dispatches
activities eagerly, as it observes it, and how its model replies name it.

A server that dispatches eagerly hands an activity scheduled by a workflow task back to the
worker that completed the task, in the same response: the activity is started as it is
scheduled (measured on the dev server: 0.02 to 0.3 ms between the two). Otherwise the activity
goes through the server's transfer queue and a poll (1.3 to 10 ms there, more on a cluster).
Each `call_model` activity a worker takes from its shared queue, at its first attempt, is one
observation. The verdict: the server dispatches eagerly while any of the last
`EagerDispatch.WINDOW` observations was eager; one that is not (or a worker that asked for no
eager dispatch) then shows within a call. A busy worker may miss an eager dispatch now and then
(no free slot), which the window absorbs.

The verdict only changes what the worker asks for in its replies, which history records: a
worker that sees no eager dispatch asks for the run's next call on its own queue
(`ModelReply.worker_queue`); otherwise it names itself (`answered_by`, `routable`) and the run
decides from what it observes (`loop.cache_affinity`).
"""

from __future__ import annotations

import logging
from collections import deque
from datetime import datetime, timedelta
from typing import Literal

from durable_agents.contracts.model_io import ModelReply

CacheAffinity = Literal["auto", "on", "off"]
"""`AGENT_CACHE_AFFINITY`: `auto` (the default) decides from what the worker and its runs see;
`on` sends every delta to the holder's own queue; `off` polls no queue of its own."""

log = logging.getLogger(__name__)

EAGER_WITHIN = timedelta(milliseconds=1)
"""An activity started within this of its scheduling was dispatched eagerly."""


class EagerDispatch:
    """Whether the worker's server dispatches its activities eagerly, from the last `WINDOW`
    first-attempt `call_model` activities the worker took from its shared queue."""

    WINDOW = 16

    def __init__(self) -> None:
        self._eager: deque[bool] = deque(maxlen=self.WINDOW)

    def observe(self, scheduled: datetime, started: datetime) -> None:
        """One activity's dispatch: when the server scheduled it and when it started (logged
        when the verdict changes)."""
        lazy = self.known_lazy
        self._eager.append(started - scheduled < EAGER_WITHIN)
        if self.known_lazy != lazy:
            log.info(
                "cache affinity: the server %s, so model replies %s",
                "does not dispatch activities eagerly" if not lazy else "dispatches eagerly",
                "ask for the next call on this worker's own queue"
                if not lazy
                else "leave it to the shared queue",
            )

    @property
    def known_lazy(self) -> bool:
        """The server was seen dispatching this worker's activities, and never eagerly lately."""
        return bool(self._eager) and not any(self._eager)


def named_reply(
    reply: ModelReply, name: str | None, mode: CacheAffinity, dispatch: EagerDispatch
) -> ModelReply:
    """`reply` naming the worker that answered it (`name`: its own task queue, which it polls
    unless `mode` is off): asking for the run's next call there when affinity is on or its
    server does not dispatch eagerly, else naming itself for the run to decide (`routable`:
    whether the run may send calls there)."""
    if name is None:
        return reply
    if mode == "on" or (mode == "auto" and dispatch.known_lazy):
        return reply.model_copy(update={"worker_queue": name})
    return reply.model_copy(update={"answered_by": name, "routable": mode == "auto"})
