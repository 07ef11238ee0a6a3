"""What one turn records in history, pinned: events, bytes, and where the full copies of a
known tool output and of the user's message are stored. Not a timing test: the counts are
deterministic. A change that adds a copy of an observation, re-records the conversation or
doubles a turn's bytes fails here; a change that removes one fails too, on purpose: update the
pins below in the same commit and say why (BENCHMARKS.md, target 3, lists where each copy is).

The workload is the benchmark's (bench/session_history.py): 2,000-character messages, a tool
(`fixed_output`) that returns 2,000 characters, a 200-character answer, through the real worker,
the real `openai` client and the fake model server.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from typing import Any

from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy

import bench.bench_tools  # noqa: F401  (registers fixed_output)
from bench.bench_tools import fixed_text
from bench.copies import event_labels, full_copies
from bench.fake_model import bench_model
from bench.history_reading import Parts, session_turn_bytes
from bench.session_history import TOOL_CHARS, turn_of_text, user_message
from contracts.session import TurnResult
from tests.conftest import AgentHarness
from tests.eventually import eventually

HEADROOM = 1.25
"""Bytes may grow by a quarter (a longer error text, a new small field) before this fails."""

EVENT_SLACK = 6
"""Workflow tasks can batch a signal with what follows it or not, depending on timing."""

ONE_SHOT_EVENTS = 24
ONE_SHOT_BYTES = 13_600
ONE_SHOT_OBSERVATION = {
    "ActivityTaskCompleted fixed_output": 1,  # the tool's result
    "ActivityTaskScheduled call_model": 1,  # the next model call's delta (the tool message)
    "WorkflowExecutionCompleted": 1,  # the run's result (its steps)
}

SESSION_TURN = 3  # two earlier turns in memory
SESSION_TURN_EVENTS = {"session": 13, "turn run": 29}
SESSION_TURN_BYTES = 52_400
SESSION_OBSERVATION = {
    "turn run: ActivityTaskCompleted fixed_output": 1,
    "turn run: ActivityTaskScheduled call_model": 1,
    "turn run: SignalExternalWorkflowExecutionInitiated turn_finished": 1,
    "turn run: WorkflowExecutionCompleted": 1,
    "session: WorkflowExecutionSignaled turn_finished": 1,
    "session: ChildWorkflowExecutionCompleted": 1,
    "session: UpdateCompleted": 1,
}
SESSION_MESSAGE = {
    "session: UpdateAccepted send": 1,
    "session: StartChildWorkflowExecutionInitiated": 1,
    "turn run: WorkflowExecutionStarted": 1,
    "turn run: ActivityTaskScheduled call_model": 1,
}
SESSION_PREVIOUS_MESSAGE = {  # the memory window, re-recorded every turn
    "session: StartChildWorkflowExecutionInitiated": 1,
    "turn run: WorkflowExecutionStarted": 1,
    "turn run: ActivityTaskScheduled call_model": 1,
}


def size(events: list[HistoryEvent]) -> int:
    return sum(e.ByteSize() for e in events)


async def test_a_one_shot_turn_records_its_tool_output_three_times(agent: AgentHarness) -> None:
    agent.fake.set_handler(bench_model)
    prompt = f"[fixed 7 {TOOL_CHARS}] Call fixed_output and summarise it."
    _, handle = await agent.run({"prompt": prompt, "tools": ["fixed_output"]})
    events = list((await handle.fetch_history()).events)

    copies = full_copies(events, fixed_text(7, TOOL_CHARS))
    if os.environ.get("HISTORY_BUDGET_PRINT"):  # to update the pins
        print(dict(copies), len(events), size(events))
    assert dict(copies) == ONE_SHOT_OBSERVATION, dict(copies)
    assert len(events) <= ONE_SHOT_EVENTS + EVENT_SLACK, Counter(event_labels(events))
    assert size(events) <= ONE_SHOT_BYTES * HEADROOM, size(events)


async def send(agent: AgentHarness, session_id: str, turn: int) -> TurnResult:
    if turn == 1:
        start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            "SessionWorkflow",
            {"agent": {"tools": ["fixed_output"]}},
            id=session_id,
            task_queue=agent.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        return await agent.client.execute_update_with_start_workflow(
            "send",
            {"text": user_message(turn)},
            start_workflow_operation=start,
            result_type=TurnResult,
        )
    handle = agent.client.get_workflow_handle(session_id)
    return await handle.execute_update("send", {"text": user_message(turn)}, result_type=TurnResult)


async def session_history_with_child_closed(
    agent: AgentHarness, session_id: str
) -> list[HistoryEvent]:
    events = list((await agent.client.get_workflow_handle(session_id).fetch_history()).events)
    closed = "ChildWorkflowExecutionCompleted"
    assert sum(label == closed for label in event_labels(events)) == SESSION_TURN
    return events


async def test_a_session_turn_records_what_it_is_pinned_to(agent: AgentHarness) -> None:
    agent.fake.set_handler(bench_model)
    session_id = f"budget-{uuid.uuid4().hex[:8]}"
    for turn in range(1, SESSION_TURN + 1):
        result = await send(agent, session_id, turn)
        assert result.stop_reason == "completed", result
    child = agent.client.get_workflow_handle(f"{session_id}/turn-{SESSION_TURN}")
    await child.result()  # (the update answers on the turn's report, before its run closes)
    session_events = await eventually(
        lambda: session_history_with_child_closed(agent, session_id), what="the child's close"
    )
    parts: dict[int, Parts] = {}
    by_turn: dict[int, list[HistoryEvent]] = {}
    session_turn_bytes(session_events, parts, turn_of_text, by_turn)
    child_events = list((await child.fetch_history()).events)
    where = {"session": by_turn[SESSION_TURN], "turn run": child_events}

    def copies_of(text: str) -> dict[str, int]:
        found: Counter[str] = Counter()
        for label, events in where.items():
            found += full_copies(events, text, f"{label}: ")
        return dict(found)

    if os.environ.get("HISTORY_BUDGET_PRINT"):  # to update the pins
        print(
            copies_of(fixed_text(SESSION_TURN, TOOL_CHARS)), copies_of(user_message(SESSION_TURN))
        )
        print(copies_of(user_message(SESSION_TURN - 1)), {k: len(v) for k, v in where.items()})
        print(sum(size(events) for events in where.values()))
    assert copies_of(fixed_text(SESSION_TURN, TOOL_CHARS)) == SESSION_OBSERVATION
    assert copies_of(user_message(SESSION_TURN)) == SESSION_MESSAGE
    assert copies_of(user_message(SESSION_TURN - 1)) == SESSION_PREVIOUS_MESSAGE
    for label, events in where.items():
        assert len(events) <= SESSION_TURN_EVENTS[label] + EVENT_SLACK, Counter(
            event_labels(events)
        )
    total = sum(size(events) for events in where.values())
    assert total <= SESSION_TURN_BYTES * HEADROOM, total
