"""Issue 32 parts 3 and 5: the seed eval suite, and the cost of a turn, against a real model.

    python -m bench.real_model eval --base-url URL --out FILE   # seed suite, ReAct and plan
    python -m bench.real_model eval --mode plan_and_execute ...  # one mode only
    python -m bench.real_model cost --base-url URL --out FILE   # overhead per turn; vs naive
    python -m bench.real_model tools --base-url URL --out FILE  # native vs prompted tool calls
    python -m bench.real_model from-runs --base-url URL --out FILE   # evals from recorded runs

`URL` is the base URL `make real-model` prints (llama-server with Qwen2.5-Coder-1.5B). Both
start a Temporal dev server here (free ports; its database kept beside `FILE`, so the runs can
be read again with `temporal server start-dev --db-filename ...`), put a metering proxy in
front of the model server, and start `worker.py` as `make run` does, pointed at the proxy by
the variables `make real-model` prints. Every case goes through `agent eval` (the command
line), one run at a time (`--concurrency 1`: the server has one slot), so the model requests
of a run are the ones the proxy saw between the run's start and its close.

The proxy (`MeteringProxy`) passes every request and reply through unchanged, streamed as it
comes, and keeps for each: when it started and ended, the tokens the server reported (`usage`)
and llama-server's own `timings` (milliseconds spent reading the prompt and writing the reply).

- `eval`: `evals/seed_cases.yaml` in ReAct mode and again in plan-and-execute mode (the same
  suite with `mode: plan_and_execute` in its defaults). Two things differ from the file, both
  because one model call takes seconds to minutes on this CPU, not the fake's milliseconds:
  every run may take 900 s (`timeout_seconds`) and each model call 600 s
  (`model_timeout_seconds`, as the real-model journeys set it).
- `cost`: the ReAct cases of `evals/multi_step.yaml` (arithmetic with the calculator alone)
  through ours, then the same prompts through the naive loop of `bench.naive_workflow` (a
  `bench.worker_proc --kind naive` worker, calculator only). For each run: wall time (the
  workflow's start to close, on the server), the model's time (the proxy's request durations),
  what is left (the project's overhead, the calculator's few milliseconds included) per model
  call and as a share of the model's time, and the tokens the server counted.
- `tools`: the same ReAct cases twice, with the model's native tool calling and in prompted
  mode (`MODEL_TOOL_CALLING=prompted`: tools described in the prompt, calls read from fenced
  JSON or `<tool_call>` blocks), each on a fresh worker against the same model server.
- `from-runs`: two runs made with `agent run` (a calculation; a write `ann` approves), then
  `agent eval --from-runs` reruns them with another system prompt on the same model, the
  recorded tool outputs replayed as fixtures.

The result JSON goes to `--out`; `python -m scripts.docs.benchmarks record real-model-eval
...` keeps it under `bench/results/measured/`, where EVALS.md's and BENCHMARKS.md's tables
are rendered from (`scripts/docs/benchmarks.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from bench.harness import Proc, spawn
from bench.naive_workflow import NaiveAgentWorkflow, NaiveTask
from scripts.real_model import (
    LLAMA_PACKAGE,
    LLAMA_VERSION,
    MODEL_NAME,
    MODEL_SHA256,
    SERVER_ARGS,
    TEMPLATE,
    server_version,
    worker_process_environment,
)
from testkit.crash_tools import WorkerProcess

ROOT = Path(__file__).resolve().parent.parent
SEED_SUITE = ROOT / "evals" / "seed_cases.yaml"
MULTI_STEP_SUITE = ROOT / "evals" / "multi_step.yaml"
RUN_TIMEOUT_SECONDS = 900
MODEL_TIMEOUT_SECONDS = 600
EVAL_DEADLINE_SECONDS = 4 * 3600
NAIVE_MAX_TURNS = 10
CALLER_GONE = 499
"""The status a request is recorded with when its caller closed the connection mid-reply."""


@dataclass
class ModelRequest:
    """One request the proxy passed on, and what the model server said of it."""

    started: float
    ended: float
    path: str
    status: int
    stream: bool
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    prompt_ms: float | None = None
    predicted_ms: float | None = None

    @property
    def seconds(self) -> float:
        return self.ended - self.started

    def read(self, payload: dict[str, Any]) -> None:
        """Take `usage` and llama-server's `timings` from a reply or a stream's chunk."""
        usage = payload.get("usage") or {}
        if usage:
            self.prompt_tokens = usage.get("prompt_tokens")
            self.completion_tokens = usage.get("completion_tokens")
            self.cached_tokens = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        timings = payload.get("timings") or {}
        if timings:
            self.prompt_ms = timings.get("prompt_ms")
            self.predicted_ms = timings.get("predicted_ms")
            self.prompt_tokens = self.prompt_tokens or (
                timings.get("prompt_n", 0) + timings.get("cache_n", 0)
            )
            self.completion_tokens = self.completion_tokens or timings.get("predicted_n")


def payloads(body: bytes, stream: bool) -> list[dict[str, Any]]:
    """The JSON objects of a reply: the body, or each `data:` line of an event stream."""
    if not stream:
        try:
            parsed = json.loads(body)
        except ValueError:
            return []
        return [parsed] if isinstance(parsed, dict) else []
    found = []
    for line in body.decode(errors="replace").splitlines():
        data = line.removeprefix("data:").strip()
        if line.startswith("data:") and data.startswith("{"):
            try:
                found.append(json.loads(data))
            except ValueError:
                continue
    return found


@dataclass
class MeteringProxy:
    """Passes `/v1/...` requests on to the model server and records each (`ModelRequest`)."""

    upstream: str
    """The model server's base URL, `http://127.0.0.1:PORT/v1`."""
    requests: list[ModelRequest] = field(default_factory=list)
    port: int = 0
    _session: aiohttp.ClientSession | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def forward(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        started = time.time()
        assert self._session is not None
        root = self.upstream.removesuffix("/v1")
        headers = {k: v for k, v in request.headers.items() if k.lower() in ("content-type",)}
        received = bytearray()
        async with self._session.request(
            request.method, root + request.path_qs, data=body, headers=headers
        ) as upstream:
            kind = upstream.headers.get("Content-Type", "application/json")
            status = upstream.status
            response = web.StreamResponse(status=status, headers={"Content-Type": kind})
            try:
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    received.extend(chunk)
                    await response.write(chunk)
                await response.write_eof()
            except ConnectionError:  # the caller went away (a cancelled run): still counted
                status = CALLER_GONE
        stream = kind.startswith("text/event-stream")
        record = ModelRequest(started, time.time(), request.path, status, stream)
        for payload in payloads(bytes(received), stream):
            record.read(payload)
        self.requests.append(record)
        return response

    @asynccontextmanager
    async def running(self) -> AsyncIterator[MeteringProxy]:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.forward)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = runner.addresses[0][1]
        try:
            yield self
        finally:
            await runner.cleanup()
            await self._session.close()

    def between(self, start: float, end: float) -> list[ModelRequest]:
        """The chat requests that started inside one run's window."""
        return [
            r for r in self.requests if start <= r.started <= end and "chat/completions" in r.path
        ]


def model_figures(requests: list[ModelRequest]) -> dict[str, Any]:
    """What the model server did for one run: requests, seconds, tokens."""

    def total(name: str) -> float:
        return sum(getattr(r, name) or 0 for r in requests)

    return {
        "requests": len(requests),
        "model_seconds": round(sum(r.seconds for r in requests), 3),
        "server_compute_seconds": round((total("prompt_ms") + total("predicted_ms")) / 1000, 3),
        "prompt_tokens": int(total("prompt_tokens")),
        "completion_tokens": int(total("completion_tokens")),
        "cached_tokens": int(total("cached_tokens")),
        "errors": sum(r.status >= 400 for r in requests),
    }


@dataclass
class Stack:
    """The dev server, the proxy and `worker.py`, for one measurement."""

    client: Client
    address: str
    task_queue: str
    proxy: MeteringProxy
    root: Path


@asynccontextmanager
async def stack(
    base_url: str, root: Path, worker_settings: dict[str, str] | None = None
) -> AsyncIterator[Stack]:
    """The stack, `worker.py` with `worker_settings` added to its environment."""
    root.mkdir(parents=True, exist_ok=True)
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=f"{sys.prefix}/bin/temporal",
        data_converter=pydantic_data_converter,
        dev_server_extra_args=["--db-filename", str(root / "dev.db")],
        dev_server_log_level="error",
    )
    try:
        address = str(env.client.service_client.config.target_host)
        async with MeteringProxy(base_url).running() as proxy:
            task_queue = f"agents-real-{uuid.uuid4().hex[:8]}"
            (root / "workspace").mkdir(exist_ok=True)
            worker_env = worker_process_environment(proxy.base_url, address, task_queue, root)
            worker_env |= worker_settings or {}
            worker = await WorkerProcess.start(worker_env, root / "worker.log", ready_timeout=120)
            try:
                yield Stack(env.client, address, task_queue, proxy, root)
            finally:
                await worker.stop()
    finally:
        await env.shutdown()


def real_model_suite(source: Path, target: Path, extra_defaults: dict[str, Any]) -> Path:
    """`source` with the real model's time limits (and `extra_defaults`), written to `target`."""
    suite = yaml.safe_load(source.read_text())
    suite["defaults"] = {
        **suite.get("defaults", {}),
        "model_timeout_seconds": MODEL_TIMEOUT_SECONDS,
        **extra_defaults,
    }
    suite["timeout_seconds"] = RUN_TIMEOUT_SECONDS
    for scenario in suite["scenarios"]:
        scenario.pop("timeout_seconds", None)
    target.write_text(yaml.safe_dump(suite, sort_keys=False))
    return target


def agent_command(here: Stack, *args: str) -> list[str]:
    """`agent ARGS` as `make run`'s CLI would run it against the stack's server and queue."""
    connection = ("--address", here.address, "--task-queue", here.task_queue)
    return [sys.executable, "-m", "durable_agents.cli.main", *connection, *args]


async def agent_eval(here: Stack, suite: Path, out: Path, *flags: str) -> dict[str, Any]:
    """`agent eval SUITE --concurrency 1 --out OUT` against the stack; its results.json."""
    eval_args = ("eval", str(suite), "--concurrency", "1", "--out", str(out), *flags)
    process = await asyncio.create_subprocess_exec(*agent_command(here, *eval_args), cwd=ROOT)
    await asyncio.wait_for(process.wait(), EVAL_DEADLINE_SECONDS)
    results: dict[str, Any] = json.loads((out / "results.json").read_text())
    return results


async def window(client: Client, workflow_id: str) -> tuple[float, float]:
    """When a run started and closed, on the server's clock (seconds since the epoch)."""
    described = await client.get_workflow_handle(workflow_id).describe()
    assert described.close_time is not None, f"{workflow_id} is still running"
    return described.start_time.timestamp(), described.close_time.timestamp()


async def steps_of(client: Client, workflow_id: str) -> list[dict[str, Any]] | None:
    """What the run did, step by step (tool, arguments, status, observation), from its result
    (None when it has no result: cancelled or failed)."""
    try:
        result = await client.get_workflow_handle(workflow_id).result(rpc_timeout=None)
    except Exception:
        return None
    return [
        {
            "tool": step["tool"],
            "arguments": step["raw_arguments"],
            "status": step["status"],
            "observation": step["observation"][:300],
        }
        for step in (result.get("steps") or [])
    ]


async def run_figures(here: Stack, run: dict[str, Any]) -> dict[str, Any]:
    """One eval run's figures: what `agent eval` recorded, its window and the model's share."""
    start, end = await window(here.client, run["workflow_id"])
    return {
        "scenario": run["scenario"],
        "passed": run["passed"],
        "ending": run["ending"],
        "stop_reason": run["stop_reason"],
        "steps": run["steps"],
        "turns": run["turns"],
        "tools": run["tools"],
        "usage": run["usage"],
        "latency_seconds": run["latency_seconds"],
        "wall_seconds": round(end - start, 3),
        "failures": run["failures"],
        "problems": run["problems"],
        "failure": run["failure"],
        "error": run["error"],
        "answer": (run["answer"] or "")[:400],
        "step_details": await steps_of(here.client, run["workflow_id"]),
        "model": model_figures(here.proxy.between(start, end)),
    }


async def eval_mode(here: Stack, name: str, suite: Path, *flags: str) -> dict[str, Any]:
    """`agent eval` on `suite` (with `flags`); its metrics and each run's figures."""
    results = await agent_eval(here, suite, here.root / name, *flags)
    runs = [await run_figures(here, run) for run in results["runs"]]
    (metrics,) = results["summary"]["by_model"].values()
    return {"suite": suite.name, "summary": metrics, "runs": runs}


def provenance() -> dict[str, Any]:
    """Which model and server build the figures come from."""
    return {
        "model": MODEL_NAME,
        "model_sha256": MODEL_SHA256,
        "server": f"{LLAMA_PACKAGE} {LLAMA_VERSION} llama-server ({server_version()})",
        "server_args": " ".join(SERVER_ARGS),
        "template": TEMPLATE.name,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "run_timeout_seconds": RUN_TIMEOUT_SECONDS,
        "model_timeout_seconds": MODEL_TIMEOUT_SECONDS,
    }


EVAL_MODES = {"react": {}, "plan_and_execute": {"mode": "plan_and_execute"}}
"""`eval`'s modes: the seed suite's own defaults, then with `mode: plan_and_execute`."""


async def measure_eval(base_url: str, root: Path, modes: list[str] | None = None) -> dict[str, Any]:
    """The seed suite, ReAct then plan-and-execute (or only `modes`)."""
    measured: dict[str, Any] = {}
    async with stack(base_url, root) as here:
        for mode in modes or list(EVAL_MODES):
            suite = real_model_suite(SEED_SUITE, root / f"seed-{mode}.yaml", EVAL_MODES[mode])
            measured[mode] = await eval_mode(here, mode, suite)
    return {**provenance(), "modes": measured, "passed": True}


async def naive_run(here: Stack, queue: str, scenario: dict[str, Any]) -> dict[str, Any]:
    """One prompt through the naive loop (calculator only); its answer, window and tokens."""
    workflow_id = f"naive-{scenario['name']}-{uuid.uuid4().hex[:6]}"
    task = NaiveTask(prompt=scenario["prompt"], tools=["calculator"], max_turns=NAIVE_MAX_TURNS)
    try:
        answer = await here.client.execute_workflow(
            NaiveAgentWorkflow.run,
            task,
            id=workflow_id,
            task_queue=queue,
            execution_timeout=timedelta(seconds=RUN_TIMEOUT_SECONDS),
        )
    except WorkflowFailureError as error:  # timed out: its model call never ended
        answer = f"(no answer: {error.cause})"
    start, end = await window(here.client, workflow_id)
    expected = scenario["expect"]["answer_contains"]
    expected = expected if isinstance(expected, list) else [expected]
    return {
        "scenario": scenario["name"],
        "passed": all(str(e) in answer for e in expected),
        "answer": answer[:400],
        "wall_seconds": round(end - start, 3),
        "model": model_figures(here.proxy.between(start, end)),
    }


def overhead(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Wall time left after the model's, per model call and as a share of the model's time."""
    wall = sum(r["wall_seconds"] for r in runs)
    model = sum(r["model"]["model_seconds"] for r in runs)
    calls = sum(r["model"]["requests"] for r in runs)
    tokens = sum(r["model"]["prompt_tokens"] + r["model"]["completion_tokens"] for r in runs)
    return {
        "runs": len(runs),
        "passed": sum(bool(r["passed"]) for r in runs),
        "model_calls": calls,
        "wall_seconds": round(wall, 3),
        "model_seconds": round(model, 3),
        "overhead_seconds_per_call": round((wall - model) / calls, 4) if calls else None,
        "model_seconds_per_call": round(model / calls, 3) if calls else None,
        "overhead_share": round((wall - model) / model, 5) if model else None,
        "tokens_per_task": round(tokens / len(runs), 1) if runs else None,
        "prompt_tokens": sum(r["model"]["prompt_tokens"] for r in runs),
        "completion_tokens": sum(r["model"]["completion_tokens"] for r in runs),
    }


async def measure_cost(base_url: str, root: Path) -> dict[str, Any]:
    """Ours on the multi-step suite's ReAct cases, then the naive loop on the same prompts."""
    suite_file = real_model_suite(MULTI_STEP_SUITE, root / "multi-step.yaml", {})
    scenarios = [
        s for s in yaml.safe_load(MULTI_STEP_SUITE.read_text())["scenarios"] if "react" in s["tags"]
    ]
    async with stack(base_url, root) as here:
        ours = await eval_mode(here, "ours", suite_file, "--tag", "react")
        naive_worker: Proc = spawn(
            "bench.worker_proc",
            *("--kind", "naive", "--address", here.address, "--task-queue", "naive-real"),
            *("--model-url", here.proxy.base_url),
        )
        try:
            naive = [await naive_run(here, "naive-real", s) for s in scenarios]
        finally:
            naive_worker.stop()
    result = {
        **provenance(),
        "cases": [s["name"] for s in scenarios],
        "ours": {"totals": overhead(ours["runs"]), **ours},
        "naive": {"totals": overhead(naive), "runs": naive},
    }
    share = result["ours"]["totals"]["overhead_share"]
    return {**result, "target_share": 0.02, "passed": share is not None and share < 0.02}


FROM_RUNS_PROMPTS = {
    "real-run-multiply": ("What is 17 * 25? Use the calculator.", ["--tool", "calculator"]),
    "real-run-write": (
        "Write the word hello to the file real-notes.txt.",
        ["--tool", "write_file", "--by", "ann"],
    ),
}
"""`from-runs`: the runs recorded first (`agent run`, the write approved by `ann` on stdin)."""
FROM_RUNS_PROMPT = "Be terse. Double-check every calculation with the calculator."
"""`from-runs`: the new definition the recorded runs are rerun against."""


async def agent_cli(here: Stack, *args: str, stdin: str = "") -> tuple[int, str]:
    """`agent ARGS` against the stack (its exit code and everything it printed)."""
    process = await asyncio.create_subprocess_exec(
        *agent_command(here, *args),
        cwd=here.root,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(stdin.encode()), EVAL_DEADLINE_SECONDS)
    assert process.returncode is not None
    return process.returncode, out.decode()


async def measure_from_runs(base_url: str, root: Path) -> dict[str, Any]:
    """Issue 37 with the real model: runs recorded by `agent run`, then rebuilt into cases by
    `agent eval --from-runs` and rerun against a new system prompt on the same model, the
    recorded tool outputs replayed (`real-notes.txt` is written once, by the recording)."""
    async with stack(base_url, root) as here:
        recorded = {}
        for workflow_id, (prompt, flags) in FROM_RUNS_PROMPTS.items():
            code, printed = await agent_cli(
                here, "run", prompt, "--id", workflow_id, *flags, stdin="y\n"
            )
            recorded[workflow_id] = {"exit_code": code, "printed": printed[-2000:]}
        ids = ",".join(FROM_RUNS_PROMPTS)
        args = ["eval", "--from-runs", ids, "--system-prompt", FROM_RUNS_PROMPT]
        args += ["--concurrency", "1", "--out", str(root / "from-runs")]
        code, printed = await agent_cli(here, *args)
        notes = root / "workspace" / "real-notes.txt"
        written = notes.read_text() if notes.exists() else None
    report = json.loads((root / "from-runs" / "comparison.json").read_text())
    return {
        **provenance(),
        "recorded": recorded,
        "command": shlex.join(["agent", *args[:-2]]),
        "exit_code": code,
        "printed": printed,
        "report": report,
        "file_after_rerun": written,
        "passed": code == 0,
    }


TOOL_CALLING_MODES = ("native", "prompted")
"""`MODEL_TOOL_CALLING`'s values (`runtime/settings.py`), in the order `tools` runs them."""


async def measure_tool_calling(base_url: str, root: Path) -> dict[str, Any]:
    """The multi-step suite's ReAct cases with the model's own tool calling (`native`), then
    the same cases with the tools described in the prompt and the calls read from the reply's
    text (`MODEL_TOOL_CALLING=prompted`, `activities/prompted_tools.py`): a fresh stack each,
    the same model server, one case at a time."""
    suite_file = real_model_suite(MULTI_STEP_SUITE, root / "multi-step.yaml", {})
    modes: dict[str, Any] = {}
    for mode in TOOL_CALLING_MODES:
        async with stack(base_url, root / mode, {"MODEL_TOOL_CALLING": mode}) as here:
            part = await eval_mode(here, mode, suite_file, "--tag", "react")
        modes[mode] = {"totals": overhead(part["runs"]), **part}
    return {**provenance(), "modes": modes, "passed": True}


MEASURES = {
    "eval": measure_eval,
    "cost": measure_cost,
    "tools": measure_tool_calling,
    "from-runs": measure_from_runs,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.real_model", description=__doc__)
    parser.add_argument("part", choices=list(MEASURES))
    parser.add_argument("--base-url", required=True, help="the model server (make real-model)")
    parser.add_argument("--out", type=Path, required=True, help="the result JSON")
    parser.add_argument(
        "--mode", choices=list(EVAL_MODES), action="append", help="eval: only this mode"
    )
    args = parser.parse_args(argv)
    root = args.out.with_suffix("")
    root.mkdir(parents=True, exist_ok=True)
    measure = MEASURES[args.part]
    if args.mode and args.part != "eval":
        parser.error("--mode is for eval")
    if args.mode:
        result = asyncio.run(measure_eval(args.base_url, root, args.mode))
    else:
        result = asyncio.run(measure(args.base_url, root))
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("modes", "ours", "naive")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
