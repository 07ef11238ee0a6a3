"""Where a piece of text is stored in a history: every event that holds a full copy of it,
named by what it is (`child: ActivityTaskCompleted fixed_output`, `session: UpdateCompleted
send`, ...). Used by target 3 of the benchmark and by `tests/test_history_budget.py`.

A copy is found in the event's serialized bytes (the pydantic converter writes payloads as
JSON, so a line of text without quotes or backslashes appears as it is). A *full* copy holds
the text's first, middle and last lines; a shortened one (an observation cut to a budget) does
not count as full.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent


def event_kind(event: HistoryEvent) -> str:
    """`ActivityTaskScheduled`, `WorkflowExecutionSignaled`, ... (CamelCase, as the Web UI)."""
    name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
    name = name.replace("WORKFLOW_EXECUTION_UPDATE_", "UPDATE_")
    return "".join(part.capitalize() for part in name.split("_"))


def event_labels(events: Sequence[HistoryEvent]) -> list[str]:
    """Each event's kind with what it is about: the activity type, the signal or update
    name."""
    activity_of: dict[int, str] = {}
    labels = []
    for event in events:
        kind = event_kind(event)
        detail = ""
        if event.HasField("activity_task_scheduled_event_attributes"):
            detail = event.activity_task_scheduled_event_attributes.activity_type.name
            activity_of[event.event_id] = detail
        elif event.HasField("activity_task_completed_event_attributes"):
            detail = activity_of.get(
                event.activity_task_completed_event_attributes.scheduled_event_id, ""
            )
        elif event.HasField("marker_recorded_event_attributes"):
            detail = event.marker_recorded_event_attributes.marker_name
        elif event.HasField("workflow_execution_signaled_event_attributes"):
            detail = event.workflow_execution_signaled_event_attributes.signal_name
        elif event.HasField("signal_external_workflow_execution_initiated_event_attributes"):
            detail = event.signal_external_workflow_execution_initiated_event_attributes.signal_name
        elif event.HasField("workflow_execution_update_accepted_event_attributes"):
            attrs = event.workflow_execution_update_accepted_event_attributes
            detail = attrs.accepted_request.input.name
        labels.append(f"{kind} {detail}".strip())
    return labels


def markers(text: str) -> list[bytes]:
    """The first, middle and last lines of `text` (each must occur for a full copy)."""
    lines = [line for line in text.splitlines() if len(line) >= 16] or [text]
    picked = [lines[0], lines[len(lines) // 2], lines[-1]]
    return [line.encode() for line in dict.fromkeys(picked)]


def full_copies(events: Sequence[HistoryEvent], text: str, where: str = "") -> Counter[str]:
    """How many full copies of `text` each kind of event holds, e.g.
    `{"child: ActivityTaskCompleted fixed_output": 1, ...}` with `where="child: "`."""
    found: Counter[str] = Counter()
    needles = markers(text)
    for event, label in zip(events, event_labels(events), strict=True):
        data = event.SerializeToString()
        count = min(data.count(needle) for needle in needles)
        if count:
            found[f"{where}{label}"] += count
    return found


def bytes_by_label(events: Iterable[HistoryEvent], where: str = "") -> Counter[str]:
    """Serialized bytes per kind of event."""
    events = list(events)
    sizes: Counter[str] = Counter()
    for event, label in zip(events, event_labels(events), strict=True):
        sizes[f"{where}{label}"] += event.ByteSize()
    return sizes
