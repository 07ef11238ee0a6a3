"""Target 3: history bytes per session turn, ours vs the naive loop.

A session of N turns (300; `--quick`: 100). Each message is 2,000 characters; in each turn the
model calls `fixed_output` once (2,000 characters back) and answers in 200 characters. Bytes per
turn are summed over every run of the session (each continue-as-new segment) and of the turn's
own run (ours with `turns: child`: the child `AgentWorkflow` `<session>/turn-N`; by default a
turn runs inside the session): serialized history events. The
naive session is one workflow whose update `send` runs the naive loop on an ever-growing list.

Target: ours adds at most 4x the turn's new text (message + tool output + answer) per turn (in
turns 280–300, and on average over every turn, continue-as-new included), is flat (the mean of
the last 20 turns within 1.5x of turns 20–40), and no turn stores its tool output in full more
than twice. Where each copy is stored is reported for two sample turns.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from statistics import mean
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy

from testkit.bench_model import ANSWER_CHARS, TOOL_CHARS, USER_CHARS, turn_of_text, user_message
from testkit.fixed_output import fixed_text
from testkit.history_copies import bytes_by_label, full_copies
from testkit.history_reading import TERMINAL_EVENTS, Parts, session_turn_bytes

NEW_TEXT = USER_CHARS + TOOL_CHARS + ANSWER_CHARS
MAX_PER_TURN = 4.0  # x the new text
FLAT_RATIO = 1.5
MAX_FULL_OBSERVATION_COPIES = 2


async def chain(client: Client, workflow_id: str) -> list[list[HistoryEvent]]:
    """The events of every run of a workflow's continue-as-new chain, first to last."""
    runs: list[list[HistoryEvent]] = []
    description = await client.get_workflow_handle(workflow_id).describe()
    run_id: str | None = description.raw_info.first_run_id
    while run_id:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        events = list((await handle.fetch_history()).events)
        runs.append(events)
        last = events[-1]
        run_id = None
        if last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    return runs


def where_stored(turn: int, parts: Mapping[str, Sequence[HistoryEvent]]) -> dict[str, Any]:
    """Full copies of the turn's tool output, of its message and of the previous turn's
    message (what memory re-records), and the bytes, by event, over `parts` (`session`, the
    turn's own `run`)."""
    copies: dict[str, Counter[str]] = {"observation": Counter(), "message": Counter()}
    copies["previous message"] = Counter()
    sizes: Counter[str] = Counter()
    for where, events in parts.items():
        copies["observation"] += full_copies(events, fixed_text(turn, TOOL_CHARS), f"{where}: ")
        copies["message"] += full_copies(events, user_message(turn), f"{where}: ")
        if turn > 1:
            previous = full_copies(events, user_message(turn - 1), f"{where}: ")
            copies["previous message"] += previous
        sizes += bytes_by_label(events, f"{where}: ")
    return {
        "turn": turn,
        "copies": {k: dict(v.most_common()) for k, v in copies.items()},
        "full_observation_copies": sum(copies["observation"].values()),
        "bytes_by_event": dict(sizes.most_common()),
    }


OURS_SESSION: dict[str, Any] = {"agent": {"tools": ["fixed_output"]}}


async def send_all(
    client: Client, kind: str, queue: str, turns: int, session_input: dict[str, Any]
) -> tuple[str, int, str]:
    """Send the messages one by one: (workflow id, turns answered, why it stopped early)."""
    session_id = f"bench-session-{kind}-{uuid.uuid4().hex[:8]}"
    done, stopped = 0, ""
    if kind == "naive":
        await client.start_workflow(
            "NaiveSessionWorkflow", ["fixed_output"], id=session_id, task_queue=queue
        )
    for turn in range(1, turns + 1):
        try:
            if kind == "ours" and turn == 1:
                start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
                    "SessionWorkflow",
                    session_input,
                    id=session_id,
                    task_queue=queue,
                    id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                )
                await client.execute_update_with_start_workflow(
                    "send", {"text": user_message(turn)}, start_workflow_operation=start
                )
            else:
                message: Any = user_message(turn)
                if kind == "ours":
                    message = {"text": message}
                await client.get_workflow_handle(session_id).execute_update("send", message)
        except Exception as error:  # the naive session is terminated at Temporal's 50 MB limit
            stopped = f"turn {turn}: {await why_closed(client, session_id, error)}"
            break
        done = turn
    handle = client.get_workflow_handle(session_id)
    if not stopped:
        await handle.signal("end", {"reason": "done"} if kind == "ours" else None)
        await handle.result()
    return session_id, done, stopped


async def why_closed(client: Client, workflow_id: str, error: Exception) -> str:
    """How the workflow ended, e.g. `terminated: Workflow history size exceeds limit.`"""
    handle = client.get_workflow_handle(workflow_id)
    last = None
    async for event in handle.fetch_history_events():
        last = event
    if last is not None and last.HasField("workflow_execution_terminated_event_attributes"):
        reason = last.workflow_execution_terminated_event_attributes.reason
        return f"terminated: {reason}"
    return f"{type(error).__name__}: {error}"[:200]


def naive_turns(events: Sequence[HistoryEvent]) -> dict[int, list[HistoryEvent]]:
    """The naive session's events by the turn whose update was last accepted."""
    per_turn: dict[int, list[HistoryEvent]] = {}
    current = 0
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            continue
        if event.event_type in TERMINAL_EVENTS:
            continue
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            current = turn_of_text(request.input.args.payloads[0].data.decode()[1:]) or current
        per_turn.setdefault(current, []).append(event)
    return per_turn


async def measure(
    client: Client,
    kind: str,
    queue: str,
    turns: int,
    samples: Sequence[int],
    session_input: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run a session of `turns` turns and measure it (`session_input`: ours' SessionWorkflow
    input, to try other settings)."""
    started = time.monotonic()
    session_id, done, stopped = await send_all(
        client, kind, queue, turns, session_input or OURS_SESSION
    )
    wall = time.monotonic() - started
    runs = await chain(client, session_id)
    per_turn: list[int | None] = [None] * turns
    copies: list[dict[str, Any]] = []
    if kind == "naive":
        by_turn = naive_turns([e for run in runs for e in run])
        for turn in range(1, done + 1):
            per_turn[turn - 1] = sum(e.ByteSize() for e in by_turn.get(turn, []))
        for turn in samples:
            if turn <= done:
                copies.append(where_stored(turn, {"session": by_turn[turn]}))
    else:
        parts: dict[int, Parts] = {}
        events_of: dict[int, list[HistoryEvent]] = {}
        for index, events in enumerate(runs):
            session_turn_bytes(events, parts, turn_of_text, events_of, carried=index > 0)
        child_runs = (session_input or OURS_SESSION).get("turns") == "child"
        for turn in range(1, done + 1):
            child = await chain(client, f"{session_id}/turn-{turn}") if child_runs else []
            child_events = [e for run in child for e in run]
            own = sum(e.ByteSize() for e in child_events)
            per_turn[turn - 1] = parts[turn].total + own if turn in parts else None
            if turn in samples:
                where = {"session": events_of.get(turn, []), "turn run": child_events}
                copies.append(where_stored(turn, where))
    return summarize(kind, session_id, turns, done, stopped, wall, runs, per_turn, copies)


def window_mean(per_turn: Sequence[int | None], first: int, last: int) -> float | None:
    values = [v for v in per_turn[first - 1 : last] if v is not None]
    return mean(values) if len(values) == last - first + 1 else None


def summarize(
    kind: str,
    session_id: str,
    turns: int,
    done: int,
    stopped: str,
    wall: float,
    runs: list[list[HistoryEvent]],
    per_turn: list[int | None],
    copies: list[dict[str, Any]],
) -> dict[str, Any]:
    early = window_mean(per_turn, 20, 40)
    late = window_mean(per_turn, turns - 20, turns)
    everything = window_mean(per_turn, 1, done) if done else None
    ratio = late / early if late and early else None
    most_copies = max((c["full_observation_copies"] for c in copies), default=None)
    passed = (
        late is not None
        and late <= MAX_PER_TURN * NEW_TEXT
        and everything is not None
        and everything <= MAX_PER_TURN * NEW_TEXT
        and ratio is not None
        and ratio <= FLAT_RATIO
        and most_copies is not None
        and most_copies <= MAX_FULL_OBSERVATION_COPIES
    )
    return {
        "kind": kind,
        "workflow_id": session_id,
        "turns_asked": turns,
        "turns_done": done,
        "stopped": stopped,
        "wall_seconds": round(wall, 1),
        "session_runs": len(runs),
        "largest_session_run_bytes": max(sum(e.ByteSize() for e in run) for run in runs),
        "new_text_chars": NEW_TEXT,
        "early_window": [20, 40],
        "late_window": [turns - 20, turns],
        "early_bytes_per_turn": round(early) if early else None,
        "late_bytes_per_turn": round(late) if late else None,
        "late_over_new_text": round(late / NEW_TEXT, 2) if late else None,
        "mean_bytes_per_turn": round(everything) if everything else None,
        "mean_over_new_text": round(everything / NEW_TEXT, 2) if everything else None,
        "flat_ratio": round(ratio, 3) if ratio else None,
        "most_full_observation_copies": most_copies,
        "passed": passed,
        "where_stored": copies,
        "per_turn_bytes": per_turn,
    }
