"""`bench.approval_cost` (issue 36, part 3): what it counts as one approval's, from a history
and from the server's counters. The benchmark itself runs real workers on a dev server
(`python -m bench.approval_cost`); these check its arithmetic on made-up inputs.
"""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from bench.approval_cost import after_approval, counters, history_counts, per_run

E = EventType


def events(*kinds: EventType.ValueType) -> list[HistoryEvent]:
    return [HistoryEvent(event_id=i + 1, event_type=kind) for i, kind in enumerate(kinds)]


WAITING = (
    E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
    E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    E.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
)
AFTER = (
    E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    E.EVENT_TYPE_ACTIVITY_TASK_STARTED,
    E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
    E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    E.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
)


def approval_around(*middle: EventType.ValueType) -> tuple[dict[str, Any], dict[str, Any]]:
    """The counts of the approval and of the whole run, for a run that waited, took `middle`
    (the approval and its workflow task), then ran one activity and ended."""
    history = events(*WAITING, *middle, *AFTER)
    return history_counts(after_approval(history)), history_counts(history)


def test_a_signalled_approval_starts_at_the_signal() -> None:
    signal = E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    counted, whole = approval_around(signal, *WAITING[1:])
    assert (counted["events"], counted["workflow_tasks"], counted["activity_tasks"]) == (11, 2, 1)
    assert counted["by_type"]["WORKFLOW_EXECUTION_SIGNALED"] == 1
    assert whole["events"] == 15


def test_an_update_counts_the_workflow_task_that_accepted_it() -> None:
    """An update is recorded after the workflow task it ran in: that task is the approval's."""
    accepted = E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    counted, whole = approval_around(
        *WAITING[1:], accepted, E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED
    )
    assert (counted["events"], counted["workflow_tasks"]) == (12, 2)
    assert (whole["events"], whole["workflow_tasks"]) == (16, 3)


def test_server_counters_are_summed_by_operation_and_divided_per_run() -> None:
    page = """\
# TYPE task_requests counter
task_requests{operation="TransferActiveTaskWorkflowTask",service_name="history"} 30
task_requests{operation="TransferActiveTaskWorkflowTask",service_name="history",x="y"} 6
persistence_requests{operation="UpdateWorkflowExecution",service_name="history"} 90
service_requests{operation="SignalWorkflowExecution",service_name="frontend"} 10
service_requests{operation="SignalWorkflowExecution",service_name="history"} 10
service_requests{operation="PollWorkflowTaskQueue",service_name="frontend"} 40
something_else{operation="UpdateWorkflowExecution"} 5
"""
    after = counters(page)
    assert after == {
        "task_requests/TransferActiveTaskWorkflowTask": 36.0,
        "persistence_requests/UpdateWorkflowExecution": 90.0,
        "service_requests/SignalWorkflowExecution": 10.0,
        "service_requests/PollWorkflowTaskQueue": 40.0,
    }
    before = {"task_requests/TransferActiveTaskWorkflowTask": 6.0}
    grown = per_run(before, after, 10)
    assert grown["task_requests/TransferActiveTaskWorkflowTask"] == 3.0
    assert grown["persistence_requests/UpdateWorkflowExecution"] == 9.0
    assert per_run(after, after, 10) == {}  # nothing grew: nothing counted
