"""Cache affinity decided from what a run observes (docs/fleet.md): the pure rules of where a
run's next model call with a context delta goes. No Temporal, no I/O.

A worker's context cache holds the conversations it answered, so a delta must reach the worker
that holds its conversation (its holder), or it misses and the whole conversation goes again.
Whether the shared task queue brings it there depends on the server: one that dispatches
activities eagerly (a dev server) hands the call to the worker that ran the workflow task,
which is the holder; one that does not hands it to any worker that polls. A worker-specific
queue always reaches the holder, but a server never dispatches it eagerly, so it costs a
transfer-queue tick (about 50 ms at a dev server's defaults) where the shared queue would
have been free.

So a run sends its deltas to the holder's own queue only when it must:
- the holder asks for it (`ModelReply.worker_queue`): its affinity is on, or it saw its
  server dispatch without eagerness (`activities.cache_affinity`);
- or the run has seen a delta sent on the shared queue reach another worker
  (`CachedConversation.missed`) and the holder polls a queue of its own
  (`ModelReply.routable`).

Every input is a recorded activity result or state derived from them, so replay decides the
same way on any worker.
"""

from __future__ import annotations

from durable_agents.contracts.model_io import ModelReply


def reply_worker(reply: ModelReply) -> str | None:
    """The worker that answered (or missed) a call, as its reply names it."""
    return reply.worker_queue or reply.answered_by


def missed_elsewhere(held: int | None, reply: ModelReply, holder: str | None) -> bool:
    """Whether a delta that builds on `held` cached messages was taken by a worker other than
    the conversation's holder: a sign that the shared queue scatters the run's calls. A miss by
    the holder itself (its cache evicted the conversation) says nothing about the queue."""
    return bool(held) and reply_worker(reply) != holder


def affinity_queue(reply: ModelReply, missed: bool) -> str | None:
    """The queue of the run's next delta after `reply` answered (None: the shared queue)."""
    if reply.worker_queue is not None:
        return reply.worker_queue
    if reply.routable and missed:
        return reply.answered_by
    return None
