"""Helpers for human-in-the-loop tests: wait until a run is waiting for a person."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import WorkflowHandle

from contracts.approvals import PendingRequest


async def wait_for_pending(
    handle: WorkflowHandle[Any, Any], count: int = 1, timeout: float = 15.0
) -> list[PendingRequest]:
    """Poll the `pending_approvals` query until `count` requests are pending."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        pending = await handle.query("pending_approvals", result_type=list[PendingRequest])
        if len(pending) >= count:
            return pending
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"expected {count} pending requests, have {pending}")
        await asyncio.sleep(0.05)
