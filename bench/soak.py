"""Soak test: many agent runs through injected model faults and random worker kills.

    .venv/bin/python -m bench.soak                       # 50 runs, the defaults below
    .venv/bin/python -m bench.soak --runs 200 --seed 7 --kill-every 6 --fault-rate 0.4

What it sets up (all on free ports, in a fresh temporary folder unless `--workdir` is given):

- a Temporal dev server with a SQLite file store (runtime.dev_server.DevServer, as `make run`);
- the fake OpenAI-compatible server (testkit/fake_openai.py) scripted per run: turn 1 asks for a
  `crash_effect` call (some runs need a person's approval for it), turn 2 for another one, turn 3
  answers. Before any reply, with probability `--fault-rate`, it sends a fault instead: 429
  (with or without Retry-After), 500/502/503, a dropped connection, a body that is not JSON, a
  truncated body, a 200 without choices, or a reply slower than the run's model timeout; at most
  `--max-faults` in a row for one model call, so a run can always finish within its attempts;
- `--workers` real `python worker.py` processes loading `testkit.crash_tools`; every
  `--kill-every` seconds (with jitter) one of them is killed with SIGKILL (or, with probability
  `--graceful`, stopped with SIGTERM) and a new one is started;
- an approver that answers pending approvals of the runs that need one.

What it checks, from the records `crash_effect` writes (see testkit/crash_tools.py):

- **duplicates**: a side effect performed more than once for one idempotency key (must be 0);
- **lost effects**: a completed run whose tool step reports success without its effect;
- **hung** runs: not finished within `--run-timeout` seconds;
- how many tool executions started again after a kill, and how many of those found their effect
  already done (the idempotency key at work), model requests per model call, kills, restarts.

Exit status: 0 when there are no duplicates, no lost effects and no hung runs; 1 otherwise.
Runs that fail (e.g. ModelCallFailed because faults and kills outlasted the attempts) are
reported but do not fail the soak. Not part of the test suite; it takes minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.runtime.dev_server import DevServer
from durable_agents.testing import fake_openai as fake
from testkit.crash_tools import WorkerCluster, WorkerProcess, events, free_port, ledger_entries

MODEL_TIMEOUT_SECONDS = 3
MODEL_MAX_ATTEMPTS = 6
TOOL = "crash_effect"


@dataclass
class RunPlan:
    index: int
    workflow_id: str
    approval: bool
    holds: tuple[dict[str, float], dict[str, float]]

    @property
    def prompt(self) -> str:
        return f"soak run {self.index}"


@dataclass
class RunOutcome:
    plan: RunPlan
    status: str  # completed | failed | hung
    seconds: float
    result: AgentResult | None = None
    error: str | None = None


class FaultyModel:
    """The fake server's handler: faults at random, then the scripted reply for the turn."""

    def __init__(self, rng: random.Random, plans: dict[str, RunPlan], rate: float, most: int):
        self._rng = rng
        self._plans = plans
        self._rate = rate
        self._most = most
        self._lock = threading.Lock()
        self._streak: Counter[tuple[str, int]] = Counter()
        self.requests: Counter[tuple[str, int]] = Counter()
        self.faults: Counter[str] = Counter()

    def fault(self) -> tuple[str, fake.ReplyLike]:
        body = json.dumps({"id": "x", "object": "chat.completion", "choices": [{"index": 0}]})
        no_choices = {"id": "x", "object": "chat.completion", "created": 0, "model": "m"}
        choices: list[tuple[str, fake.ReplyLike]] = [
            ("429", fake.error(429, "Rate limit reached")),
            ("429+Retry-After", fake.error(429, "slow down", headers={"Retry-After": "1"})),
            ("500", fake.error(500)),
            ("502", fake.error(502)),
            ("503", fake.error(503)),
            ("drop", fake.drop()),
            ("not json", fake.raw(200, b"{not json")),
            ("truncated", fake.raw(200, body[: len(body) // 2])),
            ("no choices", fake.raw(200, json.dumps({**no_choices, "choices": []}))),
            ("slow", fake.delay(MODEL_TIMEOUT_SECONDS + 2, fake.text("too late"))),
        ]
        return self._rng.choice(choices)

    def __call__(self, body: dict[str, Any]) -> fake.ReplyLike:
        prompt = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
        plan = self._plans.get(prompt)
        if plan is None:
            return fake.error(400, f"soak: unknown prompt {prompt!r}")
        turn = 1 + sum(1 for m in body["messages"] if m["role"] == "tool")
        key = (plan.workflow_id, turn)
        with self._lock:
            self.requests[key] += 1
            if self._streak[key] < self._most and self._rng.random() < self._rate:
                self._streak[key] += 1
                name, reply = self.fault()
                self.faults[name] += 1
                return reply
        if turn <= 2:
            args: dict[str, Any] = {"label": f"{plan.index}-{turn}", **plan.holds[turn - 1]}
            if turn == 1 and plan.approval:
                args["approval"] = True
            return fake.tool_calls(fake.call(TOOL, args, id=f"t{turn}"))
        return fake.text(f"soak answer {plan.index}")


@dataclass
class Chaos:
    """Keeps `size` workers running, killing (or stopping) one at random intervals."""

    cluster: WorkerCluster
    rng: random.Random
    size: int
    every: float
    graceful: float
    kills: int = 0
    graceful_stops: int = 0
    bad_exits: list[str] = field(default_factory=list)
    live: list[WorkerProcess] = field(default_factory=list)

    async def start(self) -> None:
        self.live = list(
            await asyncio.gather(*(self.cluster.start_worker() for _ in range(self.size)))
        )

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.every * self.rng.uniform(0.5, 1.5))
            if stop.is_set():
                return
            victim = self.rng.choice(self.live)
            self.live.remove(victim)
            if self.rng.random() < self.graceful:
                code = await victim.stop(signal.SIGTERM, timeout=60)
                self.graceful_stops += 1
                if code != 0:
                    self.bad_exits.append(f"{victim.log_path.name}: exit {code} after SIGTERM")
            else:
                victim.kill()
                await victim.wait(10)
                self.kills += 1
            await asyncio.sleep(self.rng.uniform(0, 2))  # sometimes no worker is up for a while
            self.live.append(await self.cluster.start_worker())

    async def close(self) -> None:
        for worker in self.live:
            code = await worker.stop(signal.SIGTERM, timeout=60)
            if code != 0:
                self.bad_exits.append(f"{worker.log_path.name}: exit {code} at the end")
        await self.cluster.close()


async def approve_when_pending(handle: WorkflowHandle[Any, Any], done: asyncio.Event) -> int:
    """Approve the run's pending calls as they appear (queries fail while no worker is up)."""
    approvals = 0
    while not done.is_set():
        try:
            pending = await handle.query(
                "pending_approvals",
                result_type=list[PendingRequest],
                rpc_timeout=timedelta(seconds=5),
            )
        except Exception:  # no worker to answer, or the run ended
            pending = []
        for request in pending:
            await handle.signal("approve", {"call_id": request.call_id, "by": "soak"})
            approvals += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), 0.5)
    return approvals


async def drive(
    client: Client, cluster: WorkerCluster, plan: RunPlan, timeout: float, gate: asyncio.Semaphore
) -> RunOutcome:
    async with gate:
        started = time.monotonic()
        handle = await cluster.start_run(
            {
                "prompt": plan.prompt,
                "tools": [TOOL],
                "model_timeout_seconds": MODEL_TIMEOUT_SECONDS,
                "model_max_attempts": MODEL_MAX_ATTEMPTS,
            },
            workflow_id=plan.workflow_id,
        )
        done = asyncio.Event()
        approver = (
            asyncio.create_task(approve_when_pending(handle, done)) if plan.approval else None
        )
        try:
            result = await asyncio.wait_for(handle.result(), timeout)
            return RunOutcome(plan, "completed", time.monotonic() - started, result=result)
        except WorkflowFailureError as failure:
            cause = failure.cause
            message = f"{type(cause).__name__}: {cause}" if cause else str(failure)
            return RunOutcome(plan, "failed", time.monotonic() - started, error=message)
        except TimeoutError:
            return RunOutcome(plan, "hung", time.monotonic() - started, error="no result")
        finally:
            done.set()
            if approver is not None:
                await approver


def verify(outcomes: list[RunOutcome], records: Path) -> dict[str, Any]:
    """Count effects, re-executions and duplicates per idempotency key."""
    by_key: dict[str, Counter[str]] = {}
    for event in events(records):
        by_key.setdefault(event["key"], Counter())[event["event"]] += 1
    duplicates = {k: c["effect"] for k, c in by_key.items() if c["effect"] > 1}
    lost: list[str] = []
    for outcome in outcomes:
        if outcome.result is None:
            continue
        for step in outcome.result.steps:
            key = f"{outcome.plan.workflow_id}/{step.iteration}/{step.call_id}"
            if step.status == "ok" and by_key.get(key, Counter())["effect"] != 1:
                lost.append(key)
    return {
        "tool_calls_recorded": len(by_key),
        "effects": sum(c["effect"] for c in by_key.values()),
        "ledger_files": ledger_entries(records),
        "restarted_executions": sum(1 for c in by_key.values() if c["start"] > 1),
        "skipped_as_already_done": sum(c["skip"] for c in by_key.values()),
        "finished_more_than_once": sum(1 for c in by_key.values() if c["finish"] > 1),
        "duplicates": duplicates,
        "lost_effects": lost,
    }


async def soak(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    folder = Path(args.workdir or tempfile.mkdtemp(prefix="soak-"))
    folder.mkdir(parents=True, exist_ok=True)
    plans = [
        RunPlan(
            index=i,
            workflow_id=f"soak-{args.seed}-{i}",
            approval=rng.random() < args.approval_rate,
            holds=(
                {"hold_after": round(rng.uniform(0, args.max_hold), 2)},
                {"hold_before": round(rng.uniform(0, args.max_hold), 2)},
            ),
        )
        for i in range(args.runs)
    ]
    model = FaultyModel(rng, {p.prompt: p for p in plans}, args.fault_rate, args.max_faults)
    print(f"soak: {args.runs} runs, seed {args.seed}, folder {folder}", flush=True)
    server = await asyncio.to_thread(
        DevServer.start, db_file=folder / "dev.db", port=free_port(), ui_port=free_port()
    )
    started = time.monotonic()
    try:
        with fake.FakeOpenAIServer() as fake_server:
            fake_server.set_handler(model)
            client = await Client.connect(server.address, data_converter=pydantic_data_converter)
            cluster = WorkerCluster(client, fake_server.base_url, folder, drain_seconds=5)
            chaos = Chaos(cluster, rng, args.workers, args.kill_every, args.graceful)
            await chaos.start()
            stop = asyncio.Event()
            chaos_task = asyncio.create_task(chaos.run(stop))
            gate = asyncio.Semaphore(args.concurrency)
            try:
                outcomes = await asyncio.gather(
                    *(drive(client, cluster, p, args.run_timeout, gate) for p in plans)
                )
            finally:
                stop.set()
                await chaos_task
                await chaos.close()
            fake_errors = fake_server.errors
    finally:
        await asyncio.to_thread(server.stop)
    elapsed = time.monotonic() - started

    status = Counter(o.status for o in outcomes)
    checks = verify(outcomes, cluster.records)
    requests_per_call = Counter(model.requests.values())
    report = {
        "runs": args.runs,
        "completed": status["completed"],
        "failed": status["failed"],
        "hung": status["hung"],
        "seconds": round(elapsed, 1),
        "approvals_needed": sum(p.approval for p in plans),
        "kills": chaos.kills,
        "graceful_stops": chaos.graceful_stops,
        "workers_started": len(cluster.workers),
        "bad_worker_exits": chaos.bad_exits,
        "model_requests": sum(model.requests.values()),
        "model_calls": len(model.requests),
        "requests_per_model_call": dict(sorted(requests_per_call.items())),
        "faults_injected": dict(model.faults.most_common()),
        # Requests neither a first try nor answered with a fault: model calls cut off by a kill.
        "model_requests_repeated_after_kills": sum(model.requests.values())
        - len(model.requests)
        - sum(model.faults.values()),
        "fake_server_errors": len(fake_errors),
        **checks,
        "failures": Counter(o.error for o in outcomes if o.status == "failed").most_common(),
        "hung_runs": [o.plan.workflow_id for o in outcomes if o.status == "hung"],
        "slowest_run_seconds": round(max((o.seconds for o in outcomes), default=0), 1),
    }
    print(json.dumps(report, indent=2, default=str))
    (folder / "soak-report.json").write_text(json.dumps(report, indent=2, default=str))
    ok = not checks["duplicates"] and not checks["lost_effects"] and not status["hung"]
    print(
        f"\nsoak: {status['completed']} completed, {status['failed']} failed, "
        f"{status['hung']} hung, {len(checks['duplicates'])} duplicate effects, "
        f"{len(checks['lost_effects'])} lost effects; {chaos.kills} kills, "
        f"{chaos.graceful_stops} graceful stops, {sum(model.faults.values())} faults "
        f"in {elapsed:.0f} s -> {'PASS' if ok else 'FAIL'}",
        flush=True,
    )
    return 0 if ok else 1


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak",
        description="Agent runs through injected model faults and random worker kills.",
    )
    parser.add_argument("--runs", type=int, default=50, help="number of runs (50)")
    parser.add_argument("--concurrency", type=int, default=10, help="runs in flight (10)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (2)")
    parser.add_argument("--kill-every", type=float, default=8.0, help="seconds between kills (8)")
    parser.add_argument(
        "--graceful", type=float, default=0.2, help="share of SIGTERM stops instead of kills (0.2)"
    )
    parser.add_argument("--fault-rate", type=float, default=0.3, help="faulty replies (0.3)")
    parser.add_argument("--max-faults", type=int, default=3, help="faults in a row per call (3)")
    parser.add_argument("--approval-rate", type=float, default=0.2, help="runs needing approval")
    parser.add_argument("--max-hold", type=float, default=2.0, help="longest tool hold, s (2)")
    parser.add_argument("--run-timeout", type=float, default=600.0, help="hung after, s (600)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", help="folder for the database, logs and records")
    args = parser.parse_args(argv)
    if args.max_faults >= MODEL_MAX_ATTEMPTS:
        parser.error(f"--max-faults must be below the model attempts ({MODEL_MAX_ATTEMPTS})")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(soak(parse(argv)))


if __name__ == "__main__":
    sys.exit(main())
