"""What one turn records in history, pinned: events, bytes, and where the full copies of a
known tool output and of the user's message are stored. Not a timing test: the counts are
deterministic. A change that adds a copy of an observation, re-records the conversation or
doubles a turn's bytes fails here; a change that removes one fails too, on purpose: update the
pins below in the same commit and say why (BENCHMARKS.md, target 3, lists where each copy is).

The workload is the benchmark's (bench/session_history.py, from testkit/bench_model.py):
2,000-character messages, a tool (`fixed_output`) that returns 2,000 characters, a
200-character answer, through the real worker, the real `openai` client and the fake model
server.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from typing import Any

from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy

import testkit.fixed_output  # noqa: F401  (registers fixed_output)
from durable_agents.contracts.session import TurnResult
from testkit.bench_model import TOOL_CHARS, bench_model, turn_of_text, user_message
from testkit.fixed_output import fixed_text
from testkit.history_copies import event_labels, full_copies
from testkit.history_reading import Parts, session_turn_bytes
from tests.conftest import AgentHarness

HEADROOM = 1.25
"""Bytes may grow by a quarter (a longer error text, a new small field) before this fails."""

EVENT_SLACK = 6
"""Workflow tasks can batch a signal with what follows it or not, depending on timing."""

ONE_SHOT_EVENTS = 32
ONE_SHOT_BYTES = 13_200
"""(8 events and about 2.2 KB of them are the run's definition record, issue 37: the patch
marker `agent-definition-once`, the SDK's `TemporalChangeVersion` upsert, the
`record_definition` activity with the run's settings that differ from the defaults as its input
and the whole definition as its result, and the workflow task that reads it; about 4.1 KB
under `agent-definition`, which sent the whole definition as the input too.)"""
ONE_SHOT_OBSERVATION = {
    "ActivityTaskCompleted fixed_output": 1,  # the tool's result
    # (not the next model call's delta: it names the output, which the worker keeps)
    "WorkflowExecutionCompleted": 1,  # the run's result (its steps)
}

SESSION_TURN = 3  # two earlier turns in memory
SESSION_TURN_EVENTS = 20
SESSION_TURN_BYTES = 11_900
SESSION_OBSERVATION = {
    "ActivityTaskCompleted fixed_output": 1,  # the tool's result (the delta names it)
}
SESSION_MESSAGE = {
    "UpdateAccepted send": 1,  # the session's input
    "ActivityTaskScheduled call_model": 1,  # the turn's first model call (its new message)
}
SESSION_PREVIOUS_MESSAGE: dict[str, int] = {}  # the memory window is named, not sent again


def size(events: list[HistoryEvent]) -> int:
    return sum(e.ByteSize() for e in events)


async def test_a_one_shot_turn_records_its_tool_output_twice(agent: AgentHarness) -> None:
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


async def test_a_session_turn_records_what_it_is_pinned_to(agent: AgentHarness) -> None:
    """A turn runs inside the session's history: its message and its tool output are stored
    once and twice, the remembered turns not at all (the worker's context cache holds them,
    and the tool output the worker that ran the tool keeps)."""
    agent.fake.set_handler(bench_model)
    session_id = f"budget-{uuid.uuid4().hex[:8]}"
    for turn in range(1, SESSION_TURN + 1):
        result = await send(agent, session_id, turn)
        assert result.stop_reason == "completed", result
    session_events = list(
        (await agent.client.get_workflow_handle(session_id).fetch_history()).events
    )
    parts: dict[int, Parts] = {}
    by_turn: dict[int, list[HistoryEvent]] = {}
    session_turn_bytes(session_events, parts, turn_of_text, by_turn)
    events = by_turn[SESSION_TURN]

    observation = dict(full_copies(events, fixed_text(SESSION_TURN, TOOL_CHARS)))
    message = dict(full_copies(events, user_message(SESSION_TURN)))
    previous = dict(full_copies(events, user_message(SESSION_TURN - 1)))
    if os.environ.get("HISTORY_BUDGET_PRINT"):  # to update the pins
        print(observation, message, previous, len(events), size(events))
        labels = event_labels(events)
        print(sorted(((e.ByteSize(), label) for e, label in zip(events, labels, strict=True))))
    assert observation == SESSION_OBSERVATION
    assert message == SESSION_MESSAGE
    assert previous == SESSION_PREVIOUS_MESSAGE
    assert len(events) <= SESSION_TURN_EVENTS + EVENT_SLACK, Counter(event_labels(events))
    assert size(events) <= SESSION_TURN_BYTES * HEADROOM, size(events)


async def test_a_child_turn_records_its_tool_output_once_too(agent: AgentHarness) -> None:
    """`turns: child`: the tool's result holds the output (the next model call names it); the
    turn's report, its run's result and the `send` result carry it shortened."""
    agent.fake.set_handler(bench_model)
    session_id = f"budget-child-{uuid.uuid4().hex[:8]}"
    handle = await agent.client.start_workflow(
        "SessionWorkflow",
        {"agent": {"tools": ["fixed_output"]}, "turns": "child"},
        id=session_id,
        task_queue=agent.task_queue,
    )
    result = await handle.execute_update("send", {"text": user_message(1)}, result_type=TurnResult)
    assert result.workflow_id == f"{session_id}/turn-1"
    child = agent.client.get_workflow_handle(result.workflow_id)
    await child.result()
    await handle.signal("end")
    await handle.result()
    copies: Counter[str] = Counter()
    for label, workflow in (("session", handle), ("turn run", child)):
        events = list((await workflow.fetch_history()).events)
        copies += full_copies(events, fixed_text(1, TOOL_CHARS), f"{label}: ")
    assert dict(copies) == {
        "turn run: ActivityTaskCompleted fixed_output": 1,
    }
