"""What this worker's operator allows runs to do, read by a run when it needs to know (its
answer is then in the run's history, so replay decides the same way)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity

from durable_agents.contracts.policy import WORKER_POLICY_ACTIVITY, WorkerPolicy


def worker_policy_activity(policy: WorkerPolicy) -> Callable[[], Any]:
    """The `worker_policy` activity, answering with `policy`."""

    @activity.defn(name=WORKER_POLICY_ACTIVITY)
    async def worker_policy() -> WorkerPolicy:
        return policy

    return worker_policy
