"""Reading an evaluated run from Temporal as a whole: the run `agent eval` started and its child
runs (a plan's goal steps, sub-agents, theirs in turn), as `whole_run.RunPart`s.

The children are the ones each history records as started (`ChildWorkflowExecutionStarted`:
workflow id and run id, so a step run again under the same id after a replan is a part of its
own), not a visibility query, which may lag behind. A child is read from its own history (every
run of its continue-as-new chain: failed and retried activities, its own children) and from its
result, or, without one, from its `status` query. A child that has ended is read once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from durable_agents.cli.evaluation.whole_run import (
    RunPart,
    part_from_result,
    part_from_status,
    steps_of,
)
from durable_agents.client import AgentClient, RunHandle
from durable_agents.client.connection import QUERY_TIMEOUT
from durable_agents.client.outcome import await_outcome
from durable_agents.client.workflow_calls import query_status
from durable_agents.errors import AgentError

LOCAL_ACTIVITY_MARKER = "core_local_activity"
"""The marker a local activity leaves in history (a tool with `ToolOptions.local`): its
`failure` is set when it failed or timed out, and its `data` detail (JSON written by the SDK
core) holds the attempt it ended on."""
CLOSED = (
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
)
"""The last event of a run that has ended (continue-as-new is followed: not an end)."""


def history_failures(events: Sequence[HistoryEvent]) -> tuple[int, int]:
    """(failed or timed out activities, retried activity attempts) in a history, local
    activities included."""
    failed = retried = 0
    for event in events:
        if event.event_type in (
            EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
            EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
        ):
            failed += 1
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            retried += max(0, event.activity_task_started_event_attributes.attempt - 1)
        elif event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            marker = event.marker_recorded_event_attributes
            if marker.marker_name != LOCAL_ACTIVITY_MARKER:
                continue
            failed += marker.HasField("failure")
            data = marker.details["data"].payloads if "data" in marker.details else []
            attempt = json.loads(data[0].data).get("attempt", 1) if data else 1
            retried += max(0, int(attempt) - 1)
    return failed, retried


def history_latency(events: Sequence[HistoryEvent]) -> float | None:
    """Seconds from the first event to the last, on the server's clock."""
    if not events:
        return None
    first, last = events[0].event_time.ToDatetime(), events[-1].event_time.ToDatetime()
    return (last - first).total_seconds()


@dataclass(frozen=True)
class ChildRun:
    """A child run a history records as started: its workflow id and (first) run id."""

    workflow_id: str
    run_id: str


def children_of(events: Sequence[HistoryEvent]) -> list[ChildRun]:
    """The child runs a history started, in the order they started."""
    started = EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
    executions = [
        event.child_workflow_execution_started_event_attributes.workflow_execution
        for event in events
        if event.event_type == started
    ]
    return [ChildRun(e.workflow_id, e.run_id) for e in executions]


def last_run_id(first_run_id: str, events: Sequence[HistoryEvent]) -> str:
    """The run id of the last run of a continue-as-new chain, from the chain's history."""
    continued = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
    run_id = first_run_id
    for event in events:
        if event.event_type == continued:
            run_id = event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    return run_id


def has_ended(events: Sequence[HistoryEvent]) -> bool:
    return bool(events) and events[-1].event_type in CLOSED


@dataclass
class RunTree:
    """The run `root` and the child runs under it, read through `agents`. A child that has
    ended is read once (its part and its history are kept)."""

    agents: AgentClient
    root: RunHandle
    _ended: dict[ChildRun, tuple[RunPart, list[HistoryEvent]]] = field(default_factory=dict)

    async def steps_so_far(self) -> int | None:
        """The tool steps of the whole run until now (the root's and every child's, as its
        `status` counts them); None while the root's status is not known."""
        status = await self.root.query_status()
        if status is None:
            return None
        try:
            below = await self.parts_below(await self.root.history_events())
        except AgentError:
            return None  # a child not readable now: asked again at the next poll
        return status.steps + steps_of(below)

    async def parts_below(self, events: Sequence[HistoryEvent]) -> list[RunPart]:
        """The parts of every child run the history `events` started, and theirs in turn."""
        parts: list[RunPart] = []
        for child in children_of(events):
            known = self._ended.get(child)
            if known is None:
                child_events = await self.agents.run(
                    child.workflow_id, run_id=child.run_id
                ).history_events()
                known = (await self._own_part(child, child_events), child_events)
                if has_ended(child_events):
                    self._ended[child] = known
            parts += [known[0], *await self.parts_below(known[1])]
        return parts

    async def _own_part(self, child: ChildRun, events: list[HistoryEvent]) -> RunPart:
        """What the child did by itself: from its result, else from its `status` query."""
        last = self.agents.run(child.workflow_id, run_id=last_run_id(child.run_id, events)).workflow
        failed, retried = history_failures(events)
        if has_ended(events):
            outcome = await await_outcome(last)
            if outcome.result is not None:
                return part_from_result(child.workflow_id, outcome.result, failed, retried)
        status = await query_status(last, QUERY_TIMEOUT.total_seconds())
        if status is not None:
            return part_from_status(child.workflow_id, status, failed, retried)
        return RunPart(
            workflow_id=child.workflow_id, activity_failures=failed, activity_retries=retried
        )
