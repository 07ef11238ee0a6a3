"""Keep an activity heartbeating while it awaits slow work, so Temporal notices a dead worker
quickly and a cancellation reaches the activity promptly."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio import activity

T = TypeVar("T")


async def with_heartbeats(
    work: Awaitable[T], every_seconds: float, details: Callable[[], Any] | None = None
) -> T:
    """Await `work`, heartbeating every `every_seconds`; cancelling this cancels the work.

    With `details`, each heartbeat carries `details()` (read at that moment; None: none yet),
    which the server keeps as the activity's heartbeat details (Web UI, `temporal workflow
    describe`).
    """
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every_seconds)
            if done:
                return task.result()
            shown = details() if details is not None else None
            if shown is None:
                activity.heartbeat()
            else:
                activity.heartbeat(shown)
    finally:
        if not task.done():
            task.cancel()
