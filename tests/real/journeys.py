"""Helpers of the real-model journeys: run `agent run ... --json` and read its result, check a
run's history, and serve the HTTP API (`agent serve`) as a subprocess.

`assert_clean_history` is the check every journey ends with: no workflow task failed, one
`call_model` activity per model call the result lists, and one activity per tool call that ran
(a call a person rejected, a question to the user, a call whose arguments were not valid, and a
sub-agent's child run run no activity of their own).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_agents.contracts.agent_result import AgentResult
from scripts.real_model import free_port
from testkit.eventually import eventually
from tests.real.conftest import RealWorker
from tests.test_cli_run import ROOT, Done

RUN_TIMEOUT = 600.0
"""Generous: a CPU shared with other work answers a call in seconds to a minute."""
SERVE_READY_TIMEOUT = 90.0
WORKFLOW_SIDE_TOOLS = frozenset({"ask_user", "final_answer"})
"""Tools the workflow answers itself (a person's reply, the answer): no activity."""


SLOW_MODEL_INPUT = {"model_timeout_seconds": 600.0}
"""A model call on a shared 2-core CPU can take minutes (1-2 tokens a second when the machine
is busy, behind another run's call): the run's limit per call attempt (default 120 s) is raised
as a user of a slow local model would."""


def with_slow_model_input(args: tuple[str, ...]) -> list[str]:
    """`args` with `SLOW_MODEL_INPUT` merged into its `--input-json` (added when absent)."""
    given = list(args)
    if "--input-json" not in given:
        return [*given, "--input-json", json.dumps(SLOW_MODEL_INPUT)]
    at = given.index("--input-json") + 1
    given[at] = json.dumps(SLOW_MODEL_INPUT | json.loads(given[at]))
    return given


@dataclass
class Ran:
    """A finished `agent run`: what it printed, its result, and its workflow id."""

    done: Done
    result: AgentResult
    workflow_id: str

    @property
    def tools(self) -> list[str]:
        return [step.tool for step in self.result.steps]


async def agent_run(real: RealWorker, prompt: str, *args: str, stdin: str | None = None) -> Ran:
    """`agent run PROMPT ARGS --id ... --json`, its JSON result read and its history checked."""
    workflow_id = f"real-{uuid.uuid4().hex[:12]}"
    done = await real.cli(
        "run",
        prompt,
        "--id",
        workflow_id,
        "--json",
        *with_slow_model_input(args),
        stdin=stdin,
        timeout=RUN_TIMEOUT,
    )
    assert "Traceback" not in done.err, done.err
    result = AgentResult.model_validate_json(done.out)
    ran = Ran(done, result, workflow_id)
    await assert_clean_history(real.client, workflow_id, result)
    return ran


async def activities_of(client: Client, workflow_id: str) -> tuple[Counter[str], list[str]]:
    """(how many activities of each type the run scheduled or ran locally, the failed workflow
    tasks' causes)."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    counts: Counter[str] = Counter()
    failed_tasks = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            counts[event.activity_task_scheduled_event_attributes.activity_type.name] += 1
        elif event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            marker = event.marker_recorded_event_attributes
            if marker.marker_name == "core_local_activity":
                data = json.loads(marker.details["data"].payloads[0].data)
                counts[data["activity_type"]] += 1
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            failed = event.workflow_task_failed_event_attributes
            failed_tasks.append(f"{failed.cause}: {failed.failure.message}")
    return counts, failed_tasks


async def assert_clean_history(client: Client, workflow_id: str, result: AgentResult) -> None:
    """No failed workflow task; one activity per model call and per tool call that ran."""
    counts, failed_tasks = await activities_of(client, workflow_id)
    assert failed_tasks == [], failed_tasks
    assert counts["call_model"] == len(result.model_calls), (counts, result.model_calls)
    ran = Counter(
        step.tool
        for step in result.steps
        if step.status in ("ok", "error")
        and step.args is not None
        and step.child_workflow_id is None
        and step.tool not in WORKFLOW_SIDE_TOOLS
    )
    tool_activities = Counter(
        {name: n for name, n in counts.items() if name != "call_model" and name in ran}
    )
    assert tool_activities == ran, (counts, [s.model_dump(mode="json") for s in result.steps])


@dataclass
class Api:
    """`agent serve` on a free port, and an HTTP client for it."""

    url: str
    http: httpx.AsyncClient


@contextlib.asynccontextmanager
async def agent_serve(real: RealWorker) -> AsyncIterator[Api]:
    """`agent serve --port P` against the real worker's queue (loopback: no token needed)."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "durable_agents.cli.main",
        "--address",
        real.address,
        "--task-queue",
        real.task_queue,
        "serve",
        "--port",
        str(port),
        cwd=ROOT,
        env=real.cli.env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=RUN_TIMEOUT) as http:

            async def healthy() -> bool:
                return (await http.get("/healthz")).status_code == 200

            await eventually(
                healthy,
                timeout=SERVE_READY_TIMEOUT,
                what="agent serve to answer",
                retry_on=(AssertionError, httpx.TransportError),  # not listening yet
            )
            yield Api(url, http)
    finally:
        process.terminate()
        await process.wait()


async def sse_events(api: Api, path: str) -> list[dict[str, Any]]:
    """Every event of a server-sent event stream until it ends, as `{"event", "data"}`."""
    events: list[dict[str, Any]] = []
    kind = ""
    async with api.http.stream("GET", path) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                events.append({"event": kind, "data": json.loads(line.split(":", 1)[1])})
    return events
