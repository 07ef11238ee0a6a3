"""Workload 3, a long conversation: one run of 100 model calls, each calling `fixed_output`
(2,000 characters, distinct per call), then an answer (`[many 100 2000]`, `testkit.bench_model`).

Read from the run's history (every run of its continue-as-new chain, `run_chain`): the bytes of
history (serialized events) up to and including the completion of model call N, for every N;
whether the run completed (and how it ended if not); the largest single payload anywhere in it.
A model call is an activity whose type names a model (`call_model`, `invoke_model_activity*`,
`agent__*__model_request`).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError

from bench.peers.systems import System
from testkit.history_reading import run_chain, scheduled_id

SAMPLES = (10, 25, 50, 100)


def largest_payload(message: Message) -> int:
    """The largest `Payload` (serialized bytes) anywhere inside a protobuf message."""
    best = 0
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            items = list(value.values())
        elif isinstance(value, Message):
            items = [value]
        else:
            items = list(value)
        for item in items:
            if isinstance(item, Payload):
                best = max(best, item.ByteSize())
            elif isinstance(item, Message):
                best = max(best, largest_payload(item))
    return best


async def measure(
    client: Client, system: System, queue: str, calls: int, chars: int, out: Path
) -> dict[str, Any]:
    """Run it on `system`'s worker; record its history (`out`) for workload 5."""
    workflow_id = f"long-{system.venv or 'ours'}-{uuid.uuid4().hex[:8]}"
    prompt = f"[many {calls} {chars}] Call fixed_output every time, then summarise."
    started = time.perf_counter()
    handle = await system.start(client, queue, prompt, ["fixed_output"], calls + 1, workflow_id)
    error = None
    try:
        await handle.result()
    except WorkflowFailureError as failure:
        error = f"{failure.cause or failure}"
    seconds = time.perf_counter() - started
    per_call: list[int] = []
    total = events = largest = 0
    model_ids: set[int] = set()
    segments = []
    async for segment, history in run_chain(client, workflow_id):
        segments.append(segment)
        for event in history:
            events += 1
            total += event.ByteSize()
            largest = max(largest, largest_payload(event))
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                kind = event.activity_task_scheduled_event_attributes.activity_type.name
                if "model" in kind:
                    model_ids.add(event.event_id)
            elif (
                event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
                and scheduled_id(event) in model_ids
            ):
                per_call.append(total)
        model_ids.clear()
    last = segments[-1] if segments else None
    if len(segments) == 1:
        history_obj = await client.get_workflow_handle(workflow_id).fetch_history()
        out.write_text(history_obj.to_json())
    return {
        "system": system.name,
        "workflow_id": workflow_id,
        "model_calls": len(per_call),
        "completed": error is None and last is not None and last.close != "running",
        "close": last.close if last else None,
        "error": error,
        "seconds": round(seconds, 2),
        "runs_in_chain": len(segments),
        "events": events,
        "history_bytes": total,
        "history_bytes_at": {
            str(n): per_call[n - 1] if len(per_call) >= n else None for n in SAMPLES
        },
        "per_call_bytes": per_call,
        "largest_payload_bytes": largest,
        "history_file": str(out) if len(segments) == 1 else None,
    }
