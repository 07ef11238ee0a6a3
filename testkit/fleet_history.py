"""What a run's history says about where its model calls went (cache affinity, docs/fleet.md):
each `call_model` activity's task queue, how long it waited to start, and how it ended (an
answer, a context-cache miss, or no worker taking it before its schedule-to-start timeout);
and the approval of the call a run waits on, as `pending_approvals` shows it (its id and digest),
read from history alone. Read by tests/test_fleet.py, bench/fleet.py and bench/waiting.py."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from temporalio.api.enums.v1 import EventType, TimeoutType
from temporalio.api.history.v1 import HistoryEvent

from durable_agents.contracts.model_io import CALL_MODEL_ACTIVITY
from durable_agents.loop.approvals import args_digest
from durable_agents.loop.tool_requests import ArgsSchema, validate_args

Outcome = Literal["answered", "miss", "worker_gone", "failed", "pending"]


@dataclass
class ModelCallRoute:
    """One `call_model` activity of a run."""

    task_queue: str
    scheduled_at: datetime
    started_at: datetime | None = None
    ended_at: datetime | None = None
    outcome: Outcome = "pending"
    worker_queue: str | None = None
    """The worker-specific queue the reply named (where the conversation is now cached)."""

    @property
    def wait_seconds(self) -> float:
        """Time on the queue: scheduled to started, or to the timeout when none started it."""
        end = self.started_at or self.ended_at or self.scheduled_at
        return (end - self.scheduled_at).total_seconds()


def model_call_routes(events: Iterable[HistoryEvent]) -> list[ModelCallRoute]:
    """The run's `call_model` activities in the order they were scheduled."""
    routes: dict[int, ModelCallRoute] = {}
    for event in events:
        when = event.event_time.ToDatetime()
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == CALL_MODEL_ACTIVITY:
                routes[event.event_id] = ModelCallRoute(attrs.task_queue.name, when)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            route = routes.get(event.activity_task_started_event_attributes.scheduled_event_id)
            if route is not None:
                route.started_at = when
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            done = event.activity_task_completed_event_attributes
            route = routes.get(done.scheduled_event_id)
            if route is not None:
                payload = done.result.payloads[0]
                plain = payload.metadata.get("encoding") == b"json/plain"
                reply = json.loads(payload.data) if plain else {}  # (encrypted, or stored)
                route.ended_at = when
                route.outcome = "miss" if reply.get("context_cache_miss") else "answered"
                route.worker_queue = reply.get("worker_queue")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
            timed_out = event.activity_task_timed_out_event_attributes
            route = routes.get(timed_out.scheduled_event_id)
            if route is not None:
                route.ended_at = when
                kind_of = timed_out.failure.timeout_failure_info.timeout_type
                gone = kind_of == TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START
                route.outcome = "worker_gone" if gone else "failed"
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            route = routes.get(event.activity_task_failed_event_attributes.scheduled_event_id)
            if route is not None:
                route.ended_at, route.outcome = when, "failed"
    return list(routes.values())


def shown_approval(events: Sequence[HistoryEvent], tool: str, schema: ArgsSchema) -> dict[str, str]:
    """`{"call_id", "args_digest"}` of the last `tool` call a model reply asked for: what
    `pending_approvals` shows for it (the digest of its validated arguments), without asking the
    worker (a query of an evicted run makes it replay the run)."""
    for event in reversed(events):
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            continue
        payload = event.activity_task_completed_event_attributes.result.payloads[0]
        reply = (
            json.loads(payload.data) if payload.metadata.get("encoding") == b"json/plain" else {}
        )
        for call in reversed(reply.get("tool_calls") or []):
            if call["name"] == tool:
                args = validate_args(schema, json.loads(call["arguments"]))
                if isinstance(args, str):
                    raise ValueError(f"{tool} call {call['id']} has invalid arguments: {args}")
                return {"call_id": call["id"], "args_digest": args_digest(args)}
    raise LookupError(f"no {tool} call in this history")
