"""What one approval costs, in units the machine's load does not change (issue 36, part 3).

Workload 4 of `make bench-peers` reads an approval's cost as CPU milliseconds of the worker and of
the Temporal server, which move with everything else the two shared cores do. This benchmark
counts what those milliseconds pay for instead, for ours and for the OpenAI Agents peer
(`bench/peers/`), each with a fresh worker on the same tuned dev server (`make bench`'s):

- from each run's history, the events from the approval to the run's end, by type: workflow
  tasks, activity tasks, local activities (markers), timers, search-attribute upserts and memo
  changes (each a visibility write), and their bytes; and the whole run's, for reference;
- from the server's own Prometheus counters over the approvals (from just before the first to
  `--tail` seconds after the last run ended, so that the timers the approvals left behind fire
  inside the window): the history service's tasks by type (transfer, timer, visibility), its
  persistence requests by operation, and the frontend requests the approvals needed (signals,
  updates, queries, describes);
- the same counters over each run's whole life (from before the first run started), per run;
- the CPU the worker and the server used over the approvals' window, per approval:
  load-dependent, shown for reference only.

Systems: `ours` (the `approve` signal naming `*`, as workload 4 sends it), `ours+decide`
(`RunHandle.approve(call_id, digest=...)`, the `decide` update `agent approve` sends after its
describe), `openai-agents` (its `approve` signal, as workload 4 sends it).

    python -m bench.approval_cost [--runs 20] [--tail 12] [--systems ours,openai-agents] [--out F]

The peer runs in its venv (`bash bench/peers/venvs.sh` makes `bench/peers/.venvs/` if missing).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError

from bench import waiting
from bench.harness import Bench, bench_stack, print_result, quiet_logging
from bench.peers.systems import BASE, System
from bench.run_all import FAST_TRANSFER_QUEUE
from durable_agents.client.client import AgentClient
from durable_agents.errors import NoWorker

RUNS = 20
TAIL_SECONDS = 12.0
"""How long after the last run ended the server's counters are read again: longer than the
heartbeat timeouts (5 s for `write_file`) and the peer's 10 s `write_file` start-to-close, whose
timers fire whether or not their activity already ended."""
RATE = 25.0
"""Approvals a second, as workload 4 sends them."""
SYSTEMS = ("ours", "ours+decide", "openai-agents")

APPROVAL_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
}
COUNTED = {
    "workflow_tasks": EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    "activity_tasks": EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    "local_activities_or_markers": EventType.EVENT_TYPE_MARKER_RECORDED,
    "timers": EventType.EVENT_TYPE_TIMER_STARTED,
    "search_attribute_upserts": EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    "memo_changes": EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
}
"""The history counts shown for each system, each the number of events of its type."""

SERVER_COUNTERS = ("task_requests", "persistence_requests", "visibility_persistence_requests")
"""The server's counters read per approval, each by its `operation` label."""
FRONTEND_CALLS = (
    "SignalWorkflowExecution",
    "UpdateWorkflowExecution",
    "PollWorkflowExecutionUpdate",
    "QueryWorkflow",
    "DescribeWorkflowExecution",
)
"""The frontend requests an approval may need (the client's; the workers' polls are left out)."""

_SAMPLE = re.compile(r"^(\w+)(\{[^}]*\})?\s+(\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def scrape(port: int) -> dict[str, float]:
    """The dev server's counters (`counters`), read from its Prometheus endpoint."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60).read().decode()
    return counters(text)


def counters(text: str) -> dict[str, float]:
    """The counters named in `SERVER_COUNTERS`, and the frontend's `service_requests`, of a
    Prometheus text page, summed by `name/operation`."""
    counts: dict[str, float] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, labels, value = match.groups()
        label = dict(_LABEL.findall(labels or ""))
        if name in SERVER_COUNTERS or (
            name == "service_requests" and label.get("service_name") == "frontend"
        ):
            key = f"{name}/{label.get('operation', '?')}"
            counts[key] = counts.get(key, 0.0) + float(value)
    return counts


def per_run(before: dict[str, float], after: dict[str, float], runs: int) -> dict[str, float]:
    """What each counter grew by between two scrapes, per run (sorted by name)."""
    grown = {k: v - before.get(k, 0.0) for k, v in after.items()}
    return {k: round(v / runs, 2) for k, v in sorted(grown.items()) if v > 0}


def event_name(event: HistoryEvent) -> str:
    return EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")


def history_counts(events: Sequence[HistoryEvent]) -> dict[str, Any]:
    """What `events` hold: the counts of `COUNTED`, every type, and their bytes (serialized)."""
    types = Counter(event.event_type for event in events)
    return {
        **{name: types[kind] for name, kind in COUNTED.items()},
        "events": len(events),
        "bytes": sum(event.ByteSize() for event in events),
        "by_type": dict(sorted(Counter(event_name(e) for e in events).items())),
    }


def after_approval(events: Sequence[HistoryEvent]) -> list[HistoryEvent]:
    """The events from the approval (the first signal, or the workflow task that accepted the
    first update) to the run's end."""
    first = next(i for i, event in enumerate(events) if event.event_type in APPROVAL_EVENTS)
    if events[first].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
        while events[first].event_type != EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            first -= 1
    return list(events[first:])


def same_shape(histories: Sequence[Sequence[HistoryEvent]]) -> bool:
    """Whether every run's approval recorded the same events (the first run stands for all)."""
    return len({str(history_counts(after_approval(h))["by_type"]) for h in histories}) == 1


Approve = Callable[[WorkflowHandle[Any, Any]], Awaitable[Any]]


def approver(name: str, system: System, bench: Bench, queue: str, shown: waiting.Shown) -> Approve:
    """How `name` approves a waiting run: workload 4's way, or ours' client (`decide`)."""
    if name != "ours+decide":
        return system.approve
    agents = AgentClient(bench.client, task_queue=queue)

    async def decide(handle: WorkflowHandle[Any, Any]) -> Any:
        call = shown[handle.id]
        try:
            return await agents.run(handle.id).approve(call["call_id"], digest=call["args_digest"])
        except NoWorker:  # a starved worker took longer than the client waits: the update
            return None  # stays admitted and applies when it does (the run's end is awaited)

    return decide


async def one_system(bench: Bench, name: str, runs: int, tail: float) -> dict[str, Any]:
    """`runs` waiting runs of `name` on a fresh worker, approved at `RATE`: their counts."""
    system = next(s for s in BASE if s.name == name.split("+")[0])
    proc, queue = system.worker(bench)

    async def start(n: int) -> WorkflowHandle[Any, Any]:
        workflow_id = f"cost-{system.venv or 'ours'}-{n}-{uuid.uuid4().hex[:8]}"
        prompt = f"[approve {workflow_id}] Write the file."
        return await system.start(
            bench.client, queue, prompt, ["write_file"], 3, workflow_id, close=False
        )

    assert bench.metrics_port is not None
    at_start = scrape(bench.metrics_port)
    handles = [await start(n) for n in range(runs)]
    waited = await waiting.wait_until_all_wait(handles, timeout=60 + runs * 0.5)
    shown = await waiting.shown_of(handles) if name == "ours+decide" else {}
    await asyncio.sleep(tail)  # the waiting runs' own timers fire before the window opens
    before = scrape(bench.metrics_port)
    meter = waiting.CpuMeter({"worker": proc.ps, "server": waiting.server_process()})
    meter.start()
    await waiting.paced(handles, RATE, approver(name, system, bench, queue, shown))
    completed = await waiting.wait_for_results(handles, 60 + runs * 0.5)
    await asyncio.sleep(tail)
    cpu = meter.stop(per=runs)
    after = scrape(bench.metrics_port)
    bench.stop_worker(proc)
    histories = [(await handle.fetch_history()).events for handle in handles]
    per_approval = per_run(before, after, runs)
    return {
        "runs": runs,
        "waited": waited,
        "completed": completed,
        "approval": history_counts(after_approval(histories[0])),
        "approval_same_in_every_run": same_shape(histories),
        "whole_run": history_counts(histories[0]),
        "server_per_approval": per_approval,
        "server_per_run": per_run(at_start, after, runs),
        "cpu_ms_per_approval": {
            "worker": cpu["worker_cpu_ms_each"],
            "server": cpu["server_cpu_ms_each"],
            "window_includes_tail_s": tail,
        },
    }


async def namespace_ready(bench: Bench, timeout: float = 120.0) -> None:
    """Wait until the dev server has its `default` namespace (on a starved machine it can
    answer before it does, and a start then fails with "Namespace default is not found")."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            await bench.client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace="default")
            )
            return
        except RPCError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1.0)


async def run(systems: Sequence[str], runs: int, tail: float) -> dict[str, Any]:
    result: dict[str, Any] = {"runs": runs, "rate_per_second": RATE, "tail_seconds": tail}
    started = time.monotonic()
    async with bench_stack(FAST_TRANSFER_QUEUE) as bench:
        await namespace_ready(bench)
        result["systems"] = {name: await one_system(bench, name, runs, tail) for name in systems}
    result["seconds"] = round(time.monotonic() - started, 1)
    result["passed"] = all(side["completed"] == runs for side in result["systems"].values())
    return result


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.approval_cost", description=__doc__)
    parser.add_argument("--runs", type=int, default=RUNS, help="waiting runs per system")
    parser.add_argument("--tail", type=float, default=TAIL_SECONDS, help="seconds after the end")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=", ".join(SYSTEMS))
    parser.add_argument("--out", type=Path, default=None, help="write the result JSON here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    quiet_logging()
    # Every worker (ours, the peer's) without the SDK's 2 s deadlock detector, which a starved
    # shared machine trips: its failed and retried workflow tasks would be counted as the
    # approval's. The counts are of a run that went as it would on a machine of its own.
    os.environ.setdefault("TEMPORAL_DEBUG", "1")
    systems = [s for s in args.systems.split(",") if s]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        raise SystemExit(f"unknown systems {unknown}: choose from {', '.join(SYSTEMS)}")
    return print_result(asyncio.run(run(systems, args.runs, args.tail)), args.out)


if __name__ == "__main__":
    raise SystemExit(main())
