"""Target 6: the live event stream (issue 20, docs/events.md).

    python -m bench.stream [--quick]

1. latency from an event published in an activity (`text_delta`, `reasoning_delta`,
   `tool_progress`: their `at` is the activity's clock when the batch was made) to the client,
   p50 and p99, with 20 sessions streaming at once, two ways:
   - through `agent serve` (a real `python -m cli.main ... serve` process on a free port),
     read by `SSE_CLIENTS` httpx SSE clients per session (`GET /v1/sessions/{id}/events`);
   - to a direct subscriber (`runtime.event_stream.follow_events`, one per session);
   and the fan-out: the stream's poll *queries* the server answered per turn (its Prometheus
   `service_requests` of QueryWorkflow; a query leaves nothing in any history) with
   `SSE_CLIENTS` clients each behind `agent serve` against one direct follower each
   (`agent serve` holds one subscription per run, so the two match), and the poll *updates*
   recorded in the sessions' histories (none: the followers read through the query);
2. history per session turn (the workload of target 3: 2,000-character message and tool
   output, 200-character answer) with `stream_deltas` off, on, and on with one follower
   attached: bytes per turn, x the turn's new text (target 3: at most 4x, for off and on),
   and the stream's share. A follower reads through the stream's query, so its figure should
   be the stream-on one (a follower by update, `follow_events(by="updates")`, records the
   events it returns again);
3. worker CPU per turn with the stream off and on (the same turns, one worker process).

Runs on its own dev server and fake model (`bench.harness`); part of `make bench` as target 6.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from statistics import quantiles
from typing import Any

import httpx
from temporalio.client import Client

from bench import session_history
from bench.harness import Bench, Proc, bench_stack, free_port
from bench.report import Row
from durable_agents.contracts.events import AGENT_EVENT, SESSION_TERMINAL_EVENT_TYPES
from durable_agents.runtime.event_stream import follow_events
from testkit.bench_model import user_message

ACTIVITY_EVENTS = frozenset({"text_delta", "reasoning_delta", "tool_progress"})
"""Events an activity publishes (`model_call_started` comes from the workflow, at workflow
time, except for a retried attempt)."""
MAX_PER_TURN = session_history.MAX_PER_TURN
NEW_TEXT = session_history.NEW_TEXT
RUNS_AT_ONCE = 20
SSE_CLIENTS = 3
"""SSE clients per session behind `agent serve` (they share its one subscription)."""
POLL_UPDATE = "__temporal_workflow_stream_poll"
"""The stream's long-poll update (`WorkflowStreamClient.subscribe`): recorded in the history."""
FAN_OUT_SLACK = 1.5
"""3 SSE clients behind one subscription poll at most this many times what 1 follower does
(3 separate subscriptions would poll about 3 times as much)."""
VERDICT = {True: "yes", False: "NO", None: "not counted: the server's metrics were not read"}
QUERY_REQUESTS = re.compile(r"^service_requests\{([^}]*)\} (\S+)$", re.MULTILINE)
ROOT = Path(__file__).resolve().parent.parent


WRITING_S = 0.02
"""Seconds before each streamed chunk of the fake model's replies: a model that writes over time
(about 0.5 s a reply), so its text goes as deltas; an instant reply sends none."""


def percentile(values: Sequence[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return quantiles(values, n=100, method="inclusive")[q - 1]


def delay_ms(at: datetime) -> float:
    return (datetime.now(UTC) - at).total_seconds() * 1000


async def follow(client: Client, session_id: str, latencies: list[float]) -> int:
    """Follow a session's stream to its end; each activity event's delay to here."""
    seen = 0
    async for event in follow_events(client, session_id, stop_at=SESSION_TERMINAL_EVENT_TYPES):
        seen += 1
        if event.type in ACTIVITY_EVENTS:
            latencies.append(delay_ms(event.at))
    return seen


async def sse_follow(http: httpx.AsyncClient, session_id: str, latencies: list[float]) -> int:
    """Read a session's SSE stream from `agent serve` to `session_ended`; each activity
    event's delay to here (parsed as the client gets it)."""
    seen = 0
    data: list[str] = []
    async with http.stream("GET", f"/v1/sessions/{session_id}/events") as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                data.append(line.removeprefix("data:").strip())
                continue
            if line or not data:
                continue
            event = AGENT_EVENT.validate_json("\n".join(data))
            data = []
            seen += 1
            if event.type in ACTIVITY_EVENTS:
                latencies.append(delay_ms(event.at))
            if event.type in SESSION_TERMINAL_EVENT_TYPES:
                return seen
    return seen


@contextlib.asynccontextmanager
async def agent_serve(bench: Bench, queue: str) -> AsyncIterator[tuple[Proc, str]]:
    """`agent serve` as a user starts it (loopback, no token), on a free port, once its
    `/healthz` answers: (the process, its URL)."""
    port = free_port()
    connection = ["--address", bench.address, "--task-queue", queue]
    popen = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "durable_agents.cli.main",
            *connection,
            "serve",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "AGENT_API_TOKEN"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=5) as http:
            for _ in range(600):
                assert popen.poll() is None, f"agent serve exited with {popen.returncode}"
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get("/healthz")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
            else:
                raise RuntimeError("agent serve did not answer /healthz within 60 s")
        yield Proc(popen, url), url
    finally:
        Proc(popen, url).stop()


async def one_session(
    client: Client,
    queue: str,
    turns: int,
    agent: dict[str, Any],
    latencies: list[float] | None,
    sse: tuple[httpx.AsyncClient, int] | None = None,
) -> str:
    """A session of `turns` target-3 turns; with `latencies`, one direct follower attached, or
    (`sse`: a client of `agent serve` and how many streams) that many SSE clients."""
    session_id = f"bench-stream-{uuid.uuid4().hex[:8]}"
    handle = await client.start_workflow(
        "SessionWorkflow", {"agent": agent}, id=session_id, task_queue=queue
    )
    followers: list[asyncio.Task[int]] = []
    if latencies is not None and sse is None:
        followers.append(asyncio.create_task(follow(client, session_id, latencies)))
    elif latencies is not None and sse is not None:
        http, count = sse
        followers += [
            asyncio.create_task(sse_follow(http, session_id, latencies)) for _ in range(count)
        ]
    for turn in range(1, turns + 1):
        await handle.execute_update("send", {"text": f"[writing {WRITING_S}] {user_message(turn)}"})
    await handle.signal("end", {"reason": "done"})
    await handle.result()
    await asyncio.gather(*followers)
    return session_id


async def poll_updates(client: Client, session_id: str) -> int:
    """The stream's poll updates recorded over the session's runs (one per subscriber poll)."""
    runs = await session_history.chain(client, session_id)
    return sum(
        e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        == POLL_UPDATE
        for run in runs
        for e in run
    )


def queries_served(metrics: str) -> int:
    """The workflow queries the server's frontend answered, from its Prometheus text."""
    return sum(
        int(float(count))
        for labels, count in QUERY_REQUESTS.findall(metrics)
        if 'operation="QueryWorkflow"' in labels and 'service_name="frontend"' in labels
    )


async def server_queries(bench: Bench) -> int | None:
    """The queries the bench's dev server has answered so far (every client's: run one
    measured phase at a time); None for a server the bench did not start (not read)."""
    if bench.metrics_port is None:
        return None
    async with httpx.AsyncClient() as http:
        response = await http.get(f"http://127.0.0.1:{bench.metrics_port}/metrics")
        response.raise_for_status()
        return queries_served(response.text)


def per_turn(before: int | None, after: int | None, turns: int) -> float | None:
    """The queries a turn between two readings of the server's count (None: not read)."""
    if before is None or after is None:
        return None
    return round((after - before) / turns, 2)


def one_subscription_per_run(
    sse_per_turn: float | None, direct_per_turn: float | None
) -> bool | None:
    """`agent serve`'s SSE clients of a run share one subscription: they poll no more than
    `FAN_OUT_SLACK` times what one direct follower does (plus 2 a turn, for few polls). No polls
    counted on either side is a measure that saw nothing, not a pass; None: the server's count
    was not read (a server the bench did not start), no verdict."""
    if sse_per_turn is None or direct_per_turn is None:
        return None
    if sse_per_turn <= 0 or direct_per_turn <= 0:
        return False
    return sse_per_turn <= max(direct_per_turn * FAN_OUT_SLACK, direct_per_turn + 2)


def latency_figures(latencies: list[float]) -> dict[str, Any]:
    return {
        "events": len(latencies),
        "p50_ms": round(percentile(latencies, 50), 1),
        "p99_ms": round(percentile(latencies, 99), 1),
        "max_ms": round(max(latencies), 1) if latencies else None,
    }


async def latency(bench: Bench, queue: str, runs: int, turns: int) -> dict[str, Any]:
    """Activity event -> client, `runs` sessions at once: through `agent serve` (SSE), then to
    direct subscribers; the poll queries the server answered each way (the fan-out check) and
    the poll updates recorded in the histories."""
    agent = {"tools": ["fixed_output"], "stream_deltas": True}
    result: dict[str, Any] = {"runs_at_once": runs, "turns_each": turns}
    async with agent_serve(bench, queue) as (serve, url):
        limits = httpx.Limits(max_connections=runs * SSE_CLIENTS + 10)
        timeout = httpx.Timeout(30, read=None)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as http:
            latencies: list[float] = []
            cpu, started, queries = serve.cpu(), time.monotonic(), await server_queries(bench)
            ids = await asyncio.gather(
                *(
                    one_session(bench.client, queue, turns, agent, latencies, (http, SSE_CLIENTS))
                    for _ in range(runs)
                )
            )
            serve_cpu = serve.cpu() - cpu
        queries_per_turn = per_turn(queries, await server_queries(bench), runs * turns)
        polls = [await poll_updates(bench.client, i) for i in ids]
        result["sse"] = {
            **latency_figures(latencies),
            "clients_per_run": SSE_CLIENTS,
            "wall_s": round(time.monotonic() - started, 1),
            "poll_queries_per_turn": queries_per_turn,
            "poll_updates_per_turn": round(sum(polls) / (runs * turns), 2),
            "serve_cpu_ms_per_turn": round(serve_cpu / (runs * turns) * 1000, 1),
        }
    latencies = []
    started, queries = time.monotonic(), await server_queries(bench)
    ids = await asyncio.gather(
        *(one_session(bench.client, queue, turns, agent, latencies) for _ in range(runs))
    )
    queries_per_turn = per_turn(queries, await server_queries(bench), runs * turns)
    polls = [await poll_updates(bench.client, i) for i in ids]
    result["direct"] = {
        **latency_figures(latencies),
        "clients_per_run": 1,
        "wall_s": round(time.monotonic() - started, 1),
        "poll_queries_per_turn": queries_per_turn,
        "poll_updates_per_turn": round(sum(polls) / (runs * turns), 2),
    }
    result["one_subscription_per_run"] = one_subscription_per_run(
        *(result[k]["poll_queries_per_turn"] for k in ("sse", "direct"))
    )
    return result


async def history(bench: Bench, proc: Proc, queue: str, turns: int) -> dict[str, Any]:
    """Bytes and worker CPU per turn: stream off, on, on with a follower."""
    result: dict[str, Any] = {}
    cases = (("off", False, False), ("on", True, False), ("followed", True, True))
    for name, deltas, followed in cases:
        agent = {"tools": ["fixed_output"], "stream_deltas": deltas}
        cpu = proc.cpu()
        latencies: list[float] | None = [] if followed else None
        session_id = await one_session(bench.client, queue, turns, agent, latencies)
        cpu_per_turn_ms = (proc.cpu() - cpu) / turns * 1000
        runs = await session_history.chain(bench.client, session_id)
        total = sum(e.ByteSize() for run in runs for e in run)
        result[name] = {
            "bytes_per_turn": round(total / turns),
            "x_new_text": round(total / turns / NEW_TEXT, 2),
            "worker_cpu_ms_per_turn": round(cpu_per_turn_ms, 1),
            "runs": len(runs),
        }
    off, on = result["off"]["bytes_per_turn"], result["on"]["bytes_per_turn"]
    followed = result["followed"]["bytes_per_turn"]
    result["stream_share_on"] = round((on - off) / on, 3) if on else None
    result["stream_share_followed"] = round((followed - off) / followed, 3) if followed else None
    result["target_max_x"] = MAX_PER_TURN
    result["target_passes"] = all(
        result[k]["x_new_text"] <= MAX_PER_TURN for k in ("off", "on")
    )  # (`followed` is reported, not judged: a follower by update would add its polls)
    return result


async def measure(bench: Bench, quick: bool) -> dict[str, Any]:
    proc, queue = bench.worker("ours")
    try:
        lat = await latency(bench, queue, runs=RUNS_AT_ONCE, turns=3 if quick else 10)
        hist = await history(bench, proc, queue, turns=10 if quick else 50)
    finally:
        bench.stop_worker(proc)
    return {"latency": lat, "history": hist}


def rows(result: dict[str, Any]) -> list[str]:
    lat, hist = result["latency"], result["history"]
    sse, direct = lat["sse"], lat["direct"]
    return [
        f"stream latency activity -> SSE client of agent serve, {lat['runs_at_once']} runs at "
        f"once x {sse['clients_per_run']} clients: p50 {sse['p50_ms']} ms, p99 {sse['p99_ms']} ms "
        f"({sse['events']} events; agent serve CPU {sse['serve_cpu_ms_per_turn']} ms/turn)",
        f"stream latency activity -> direct subscriber (follow_events), {lat['runs_at_once']} "
        f"runs at once: p50 {direct['p50_ms']} ms, p99 {direct['p99_ms']} ms "
        f"({direct['events']} events)",
        f"fan-out: poll queries per turn with {sse['clients_per_run']} SSE clients a run "
        f"{sse['poll_queries_per_turn']}, with 1 direct follower {direct['poll_queries_per_turn']}"
        f" (one subscription per run: {VERDICT[lat['one_subscription_per_run']]}); "
        f"poll updates recorded per turn {sse['poll_updates_per_turn']} / "
        f"{direct['poll_updates_per_turn']}",
        *(
            f"history per turn, stream {k}: {hist[k]['bytes_per_turn']} B "
            f"({hist[k]['x_new_text']}x new text; target <= {MAX_PER_TURN}x"
            f"{'' if k != 'followed' else ', reported, not judged'}), "
            f"worker CPU {hist[k]['worker_cpu_ms_per_turn']} ms/turn"
            for k in ("off", "on", "followed")
        ),
        f"the stream's share of a turn's history: {hist['stream_share_on']:.1%} "
        f"(with a follower: {hist['stream_share_followed']:.1%}, of which the follower's polls "
        f"{hist['stream_share_followed'] - hist['stream_share_on']:.1%})",
    ]


FAST_TRANSFER_QUEUE = ["--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000"]
"""As `bench.run_all`: without it every workflow task after an activity waits for a 50 ms tick."""


def table_rows(result: dict[str, Any]) -> list[Row]:
    """Target 6's rows of `make bench`'s table (ours only: the naive loop has no stream)."""
    lat, hist = result["latency"], result["history"]
    sse, direct = lat["sse"], lat["direct"]
    return [
        Row(
            f"6 stream latency p50 / p99 to an SSE client of agent serve, "
            f"{lat['runs_at_once']} runs at once (ms)",
            f"{sse['p50_ms']} / {sse['p99_ms']}",
            "–",
            "–",
            "measured",
            None,
        ),
        Row(
            f"6 stream latency p50 / p99 to a direct subscriber, {lat['runs_at_once']} runs "
            "at once (ms)",
            f"{direct['p50_ms']} / {direct['p99_ms']}",
            "–",
            "–",
            "measured",
            None,
        ),
        Row(
            f"6 agent serve: stream poll queries per turn, {sse['clients_per_run']} SSE "
            "clients / 1 follower",
            " / ".join(
                "–" if side["poll_queries_per_turn"] is None else str(side["poll_queries_per_turn"])
                for side in (sse, direct)
            ),
            "–",
            "–",
            "one subscription per run",
            lat["one_subscription_per_run"],
        ),
        *(
            Row(
                f"6 history per turn, stream {k} (x new text)",
                f"{hist[k]['x_new_text']}",
                "–",
                "–",
                f"≤ {MAX_PER_TURN:g}x",
                hist[k]["x_new_text"] <= MAX_PER_TURN,
            )
            for k in ("off", "on")
        ),
        Row(
            "6 history per turn, one follower attached (x new text; it reads by query)",
            f"{hist['followed']['x_new_text']}",
            "–",
            "–",
            "measured",
            None,
        ),
        Row(
            "6 worker CPU per turn, stream off / on (ms)",
            f"{hist['off']['worker_cpu_ms_per_turn']} / {hist['on']['worker_cpu_ms_per_turn']}",
            "–",
            "–",
            "measured",
            None,
        ),
    ]


async def main_async(args: argparse.Namespace) -> int:
    async with bench_stack(FAST_TRANSFER_QUEUE) as bench:
        result = await measure(bench, args.quick)
    for line in rows(result):
        print(line)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "6_stream.json").write_text(json.dumps(result, indent=2))
    passes = result["history"]["target_passes"] and (
        result["latency"]["one_subscription_per_run"] is not False
    )
    return 0 if passes else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stream", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="3 turns a run, 10-turn sessions")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
