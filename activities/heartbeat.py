"""Keep an activity heartbeating while it awaits slow work, so Temporal notices a dead worker
quickly and a cancellation reaches the activity promptly."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from temporalio import activity

T = TypeVar("T")


async def with_heartbeats(work: Awaitable[T], every_seconds: float) -> T:
    """Await `work`, heartbeating every `every_seconds`; cancelling this cancels the work."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every_seconds)
            if done:
                return task.result()
            activity.heartbeat()
    finally:
        if not task.done():
            task.cancel()
