"""Helpers for human-in-the-loop tests: wait until a run is waiting for a person."""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowHandle

from durable_agents.contracts.approvals import PendingRequest
from testkit.eventually import eventually


async def wait_for_pending(
    handle: WorkflowHandle[Any, Any], count: int = 1, timeout: float = 30.0
) -> list[PendingRequest]:
    """Query `pending_approvals` until at least `count` requests are pending; return them."""

    async def pending() -> list[PendingRequest]:
        found = await handle.query("pending_approvals", result_type=list[PendingRequest])
        assert len(found) >= count, f"{len(found)} pending, expected {count}: {found}"
        return found

    return await eventually(pending, timeout=timeout, what=f"{count} pending requests")
