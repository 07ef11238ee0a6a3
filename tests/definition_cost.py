"""What recording a run's definition costs in its history (issue 37 part 1, issue 36 part 3):
a small measuring script, not a test and not a benchmark (no timing, only counts).

Against a fresh dev server and the real workers with the scripted model, it runs

- `one-shot`: a run whose model answers at once (one turn, no tool);
- `approval`: a run that calls `write_file`, waits for its approval, and answers after it;
- `session`: a 3-turn session (inline turns, the default), and `session-child`: the same with
  `turns: child` (each turn a child run; its histories are counted with the session's);

and prints, for each, the whole history's events and bytes (the sum of the events' encoded
sizes), its workflow tasks and activities, and the part the definition record takes: the
`record_definition` activities' events with the workflow task each one wakes, the
`agent-definition*` patch markers and the `TemporalChangeVersion` upserts that come with them.
For `approval`, the workflow tasks and activities from the approval signal to the run's end.

    .venv/bin/python -m tests.definition_cost [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_agents.cli.definitions import record_inputs
from tests import scripted_model as sm
from tests.conftest import BIN, DEV_SERVER_ARGS, FAKE_MODEL, started_workers
from tests.hitl_support import wait_for_pending
from tests.scripted_model import ScriptedChatModel
from tests.session_support import send_with_start

E = EventType


def definition_part(events: Sequence[HistoryEvent]) -> tuple[int, int]:
    """(events, bytes) the definition record takes: each `record_definition` activity's three
    events and the workflow task its completion wakes (three more), the `agent-definition*`
    patch markers and the `TemporalChangeVersion` upserts."""
    scheduled = record_inputs(events)
    taken: list[HistoryEvent] = []
    for index, event in enumerate(events):
        attrs = event.activity_task_completed_event_attributes
        if event.event_id in scheduled:
            taken.append(event)
        elif event.event_type in (
            E.EVENT_TYPE_ACTIVITY_TASK_STARTED,
            E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        ) and (
            event.activity_task_started_event_attributes.scheduled_event_id in scheduled
            or attrs.scheduled_event_id in scheduled
        ):
            taken.append(event)
            if event.event_type == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                taken += [
                    e
                    for e in events[index + 1 : index + 4]
                    if e.event_type
                    in (
                        E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
                        E.EVENT_TYPE_WORKFLOW_TASK_STARTED,
                        E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
                    )
                ][:3]
        elif is_definition_marker(event):
            taken.append(event)
    return len(taken), sum(e.ByteSize() for e in taken)


def is_definition_marker(event: HistoryEvent) -> bool:
    """An `agent-definition*` patch marker, or an upsert of `TemporalChangeVersion` alone."""
    if event.event_type == E.EVENT_TYPE_MARKER_RECORDED:
        details = event.marker_recorded_event_attributes.details
        patch = details.get("patch-data")
        return patch is not None and b"agent-definition" in patch.payloads[0].data
    if event.event_type == E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
        fields = event.upsert_workflow_search_attributes_event_attributes.search_attributes
        return set(fields.indexed_fields) == {"TemporalChangeVersion"}
    return False


def counts(events: Sequence[HistoryEvent]) -> dict[str, int]:
    """Events, bytes, workflow tasks and activities of a history (or a part of one)."""
    return {
        "events": len(events),
        "bytes": sum(e.ByteSize() for e in events),
        "workflow_tasks": sum(e.event_type == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for e in events),
        "activities": sum(e.event_type == E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED for e in events),
        "record_activities": len(record_inputs(events)),
    }


async def measured(handles: list[WorkflowHandle[Any, Any]]) -> dict[str, Any]:
    """The counts of these runs' histories together, and the definition record's part."""
    events: list[HistoryEvent] = []
    for handle in handles:
        events += (await handle.fetch_history()).events
    part_events, part_bytes = definition_part(events)
    return {**counts(events), "definition_events": part_events, "definition_bytes": part_bytes}


async def one_shot(client: Client, model: ScriptedChatModel, queue: str) -> dict[str, Any]:
    model.enqueue(sm.text("Paris."))
    handle = await client.start_workflow(
        "AgentWorkflow", {"prompt": "Capital of France?", "tools": ["calculator"]},
        id=f"defcost-1-{uuid.uuid4()}", task_queue=queue,
    )  # fmt: skip
    await handle.result()
    return await measured([handle])


async def approval(client: Client, model: ScriptedChatModel, queue: str) -> dict[str, Any]:
    args = {"path": "a.txt", "content": "hi", "overwrite": True}
    model.enqueue(sm.tool_calls(sm.call("write_file", args, id="w1")), sm.text("done"))
    handle = await client.start_workflow(
        "AgentWorkflow", {"prompt": "write it", "tools": ["write_file"]},
        id=f"defcost-a-{uuid.uuid4()}", task_queue=queue,
    )  # fmt: skip
    await wait_for_pending(handle)
    await handle.signal("approve", {"call_id": "w1"})
    await handle.result()
    found = await measured([handle])
    events = (await handle.fetch_history()).events
    signal = next(
        i for i, e in enumerate(events) if e.event_type == E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    )
    after = counts(events[signal:])
    return {**found, "after_approval": after}


async def session(
    client: Client, model: ScriptedChatModel, queue: str, turns: str
) -> dict[str, Any]:
    session_id = f"defcost-s-{uuid.uuid4()}"
    agent = {"system_prompt": "You answer briefly.", "tools": ["calculator"]}
    handle: WorkflowHandle[Any, Any] | None = None
    for n in range(3):
        model.enqueue(sm.text(f"answer {n}"))
        _, handle = await send_with_start(
            client, session_id, queue, f"message {n}", {"agent": agent, "turns": turns}
        )
    assert handle is not None
    handles = [handle]
    if turns == "child":
        handles += [client.get_workflow_handle(f"{session_id}/turn-{n}") for n in (1, 2, 3)]
    return await measured(handles)


async def main(as_json: bool) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(BIN / "temporal"),
        dev_server_extra_args=DEV_SERVER_ARGS,
        data_converter=pydantic_data_converter,
    )
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    found: dict[str, Any] = {}
    try:
        async with AsyncExitStack() as stack:
            with tempfile.TemporaryDirectory() as tmp:
                queue = await started_workers(stack, env.client, model, Path(tmp))
                found["one-shot"] = await one_shot(env.client, model, queue)
                found["approval"] = await approval(env.client, model, queue)
                found["session"] = await session(env.client, model, queue, "inline")
                found["session-child"] = await session(env.client, model, queue, "child")
    finally:
        await env.shutdown()
    if as_json:
        print(json.dumps(found, indent=2))
        return
    for name, shown in found.items():
        print(
            f"{name:14} {shown['events']:4} events {shown['bytes']:7,} B  "
            f"WFT {shown['workflow_tasks']:2}  activities {shown['activities']:2} "
            f"(record {shown['record_activities']})  definition: "
            f"{shown['definition_events']} events {shown['definition_bytes']:,} B"
        )
        if "after_approval" in shown:
            after = shown["after_approval"]
            print(
                f"{'':14} from the approval: {after['events']} events {after['bytes']:,} B  "
                f"WFT {after['workflow_tasks']}  activities {after['activities']} "
                f"(record {after['record_activities']})"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    asyncio.run(main(parser.parse_args().json))
    sys.stdout.flush()
    os._exit(0)  # (the SDK's runtime can abort at interpreter exit: sdk-python issue 300)
