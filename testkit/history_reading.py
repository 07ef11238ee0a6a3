"""Reading Temporal histories for the benchmarks: the runs of a continue-as-new chain, the
bytes each loop iteration or session turn added (by what added them), and byte formatting.
Shared by `bench.history_growth` and `bench.session_history`."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import (
    Client,
)

KIB = 1024
MIB = 1024 * 1024

TERMINAL_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
}

# -- reading histories -------------------------------------------------------------------------


@dataclass
class Segment:
    """One run of a continue-as-new chain."""

    run_id: str
    events: int
    bytes: int
    """Sum of the serialized sizes of its events."""
    server_bytes: int
    """`history_size_bytes` as the server reports it (describe)."""
    start_bytes: int
    """Its WorkflowExecutionStarted event: the input, i.e. the state carried over."""
    close: str
    close_bytes: int
    carried: dict[str, int] = field(default_factory=dict)
    """What the start event carried over, by field (JSON characters; fields over 1 KiB)."""


def event_name(event: HistoryEvent) -> str:
    return EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").lower()


async def run_chain(
    client: Client, workflow_id: str, first_run_id: str | None = None
) -> AsyncIterator[tuple[Segment, list[HistoryEvent]]]:
    """Every run of a workflow's continue-as-new chain, first to last, with its events."""
    if first_run_id is None:
        first_run_id = (
            await client.get_workflow_handle(workflow_id).describe()
        ).raw_info.first_run_id
    run_id: str | None = first_run_id
    while run_id:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        events = list((await handle.fetch_history()).events)
        info = (await handle.describe()).raw_info
        last = events[-1]
        terminal = last.event_type in TERMINAL_EVENTS
        yield (
            Segment(
                run_id=run_id,
                events=len(events),
                bytes=sum(e.ByteSize() for e in events),
                server_bytes=info.history_size_bytes,
                start_bytes=events[0].ByteSize(),
                close=event_name(last) if terminal else "running",
                close_bytes=last.ByteSize() if terminal else 0,
                carried=carried_fields(events[0]),
            ),
            events,
        )
        run_id = None
        if last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id


def carried_fields(started: HistoryEvent) -> dict[str, int]:
    """Sizes of what a continued run received: the agent's `resume` scratchpad (messages,
    steps, repetition state, ...) or the session's `carry` (memory, queue, ...)."""
    attrs = started.workflow_execution_started_event_attributes
    data = payload_json(attrs.input) if attrs.input.payloads else None
    carried = data.get("resume") or data.get("carry") if isinstance(data, dict) else None
    if not isinstance(carried, dict):
        return {}
    sizes = {key: len(json.dumps(value)) for key, value in carried.items()}
    if isinstance(carried.get("repetition"), dict):
        for key, value in carried["repetition"].items():
            sizes[f"repetition.{key}"] = len(json.dumps(value))
    return {key: size for key, size in sizes.items() if size > KIB}


def payload_json(payloads: Any) -> Any:
    """The first payload of a `Payloads` as JSON (the pydantic converter writes json/plain)."""
    return json.loads(payloads.payloads[0].data) if payloads.payloads else None


def scheduled_id(event: HistoryEvent) -> int | None:
    """The `scheduled_event_id` an activity event refers to, if it is one."""
    kind = event.WhichOneof("attributes")
    attrs = getattr(event, kind) if kind else None
    value = getattr(attrs, "scheduled_event_id", None) if attrs is not None else None
    return int(value) if value else None


@dataclass
class Parts:
    """Bytes of history added by one iteration (or turn), by what added them."""

    parts: dict[str, int] = field(default_factory=dict)

    def add(self, part: str, size: int) -> None:
        self.parts[part] = self.parts.get(part, 0) + size

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def as_json(self) -> dict[str, int]:
        return {**dict(sorted(self.parts.items())), "total": self.total}


def agent_iteration_bytes(events: Sequence[HistoryEvent], into: dict[int, Parts]) -> None:
    """Attribute a segment's events to the loop iterations that added them.

    `call_model` scheduled events carry the iteration (`turn`), tool activities carry it in their
    idempotency key; started/completed events follow their scheduled event; anything else
    (workflow tasks, markers) goes to the iteration in progress. The segment's first and last
    events (input carried over, result or continue-as-new) are reported per segment instead.
    """
    owner: dict[int, tuple[int, str]] = {}
    current = 0
    for event in events:
        size = event.ByteSize()
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED or kind in TERMINAL_EVENTS:
            continue
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            data = payload_json(attrs.input)
            if attrs.activity_type.name == "call_model":
                iteration, part = int(data["turn"]), "model"
            else:
                iteration, part = int(data["idempotency_key"].rsplit("/", 2)[1]), "tool"
            owner[event.event_id] = (iteration, part)
            current = max(current, iteration)
            into.setdefault(iteration, Parts()).add(f"{part}_input", size)
            continue
        ref = scheduled_id(event)
        if ref is not None and ref in owner:
            iteration, part = owner[ref]
            suffix = "output" if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED else "other"
            into.setdefault(iteration, Parts()).add(f"{part}_{suffix}", size)
            continue
        into.setdefault(current, Parts()).add("other", size)


TURN_ID = re.compile(r"/turn-(\d+)$")


def turn_of_workflow(workflow_id: str) -> int | None:
    match = TURN_ID.search(workflow_id)
    return int(match.group(1)) if match else None


def session_turn_bytes(
    events: Sequence[HistoryEvent],
    into: dict[int, Parts],
    turn_of_text: Callable[[str], int | None],
    events_into: dict[int, list[HistoryEvent]] | None = None,
    *,
    carried: bool = False,
) -> None:
    """Attribute a session segment's events to the turns that added them: the `send` update
    (accepted, completed), a child turn's start (its input: the remembered turns) and its
    events (result), the `turn_finished` signal; anything else (an inline turn's activities)
    goes to the turn in progress. A segment that continued another (`carried`) starts with the
    carried memory and queue: its start (and its events before the next message) count for
    the turn that was last in progress. With
    `events_into`, the events themselves are collected per turn too."""
    update_turn: dict[int, int] = {}
    current = max(into, default=0) if carried else 0
    starting: HistoryEvent | None = None
    for event in events:
        size = event.ByteSize()
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            starting = event if carried else None
            continue
        if kind in TERMINAL_EVENTS:
            continue
        turn: int | None = None
        part = "other"
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            found = turn_of_text(payload_json(request.input.args)["text"])
            turn, part = (current if found is None else found), "update"
            update_turn[event.event_id] = turn
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            accepted = event.workflow_execution_update_completed_event_attributes.accepted_event_id
            turn, part = update_turn.get(accepted, current), "update"
        elif kind == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            attrs = event.start_child_workflow_execution_initiated_event_attributes
            turn, part = turn_of_workflow(attrs.workflow_id), "child_input"
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            attrs_s = event.workflow_execution_signaled_event_attributes
            if attrs_s.signal_name == "turn_finished":
                turn, part = turn_of_workflow(payload_json(attrs_s.input)["workflow_id"]), "signal"
        else:
            kind_name = event.WhichOneof("attributes") or ""
            if kind_name.startswith("child_workflow_execution_"):
                attrs_c = getattr(event, kind_name)
                turn = turn_of_workflow(attrs_c.workflow_execution.workflow_id)
                part = "child_events"
        if turn is None:
            turn = current
        current = max(current, turn)
        if starting is not None and current > 0:
            into.setdefault(current, Parts()).add("carried", starting.ByteSize())
            if events_into is not None:
                events_into.setdefault(current, []).append(starting)
            starting = None
        into.setdefault(turn, Parts()).add(part, size)
        if events_into is not None:
            events_into.setdefault(turn, []).append(event)


def child_parts(events: Sequence[HistoryEvent], into: Parts) -> None:
    """What a turn's own history holds: its input (settings and the remembered turns), model
    and tool activities, the `turn_finished` signal to the session, its result."""
    owner: dict[int, str] = {}
    for event in events:
        size = event.ByteSize()
        kind = event.event_type
        part = "other"
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            part = "input"
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            part = "result"
        elif kind == EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
            part = "signal_out"
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            owner[event.event_id] = "model" if attrs.activity_type.name == "call_model" else "tool"
            part = f"{owner[event.event_id]}_input"
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            ref = event.activity_task_completed_event_attributes.scheduled_event_id
            part = f"{owner.get(ref, 'activity')}_output"
        into.add(part, size)


def human_bytes(size: float | None) -> str:
    if size is None:
        return "–"
    if size >= MIB:
        return f"{size / MIB:.2f} MiB"
    if size >= KIB:
        return f"{size / KIB:.1f} KiB"
    return f"{size:.0f} B"
