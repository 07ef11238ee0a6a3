"""The history growth benchmark's workloads: A (one long run) and B (one long session), each
run against the real workers and measured from its history (see `bench.history_growth`)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDConflictPolicy

import testkit.fixed_output  # noqa: F401  (registers fixed_output)
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.session import SessionResult, TurnResult
from durable_agents.testing import fake_openai as fake
from testkit.history_reading import (
    Parts,
    Segment,
    agent_iteration_bytes,
    child_parts,
    event_name,
    human_bytes,
    run_chain,
    session_turn_bytes,
)

TOOL_CHARS = 2000
ANSWER_CHARS = 200
BENCH_TOOLS = ["fixed_output"]

log = logging.getLogger("bench.history_growth")


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
    # Workload B reads each turn's own child run (`make bench`'s target 3 measures inline turns).
    "ours": {"agent": {"tools": BENCH_TOOLS}, "turns": "child"},
    "naive": {
        "turns": "child",
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


def turn_of_text(text: str) -> int | None:
    match = TURN_TEXT.match(text)
    return int(match.group(1)) if match else None


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
        session_turn_bytes(events, per_turn, turn_of_text)
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
