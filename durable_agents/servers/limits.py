"""Limits per principal (issue 35 item 4): runs started per minute, runs running at once, and
model tokens per day, each from the principal's `PrincipalLimits` (the principals file:
`limits = { runs_per_minute = 10, concurrent_runs = 3, tokens_per_day = 200000 }`).

A start that would break a limit is refused before any workflow starts: `LimitExceeded`, which
`agent serve` answers as 429 with `Retry-After` (`install`).

Nothing is counted in this process's memory alone, so a restart of the server resets nothing.
The counts are read from Temporal at each start of a principal with limits:
- the runs it started: `AgentWorkflow` runs whose memo names it (`starter`, and its `tenant`),
  read from visibility (`StartTime` within the window, or `ExecutionStatus = 'Running'`);
- their tokens: the `AgentTokens` search attribute the run keeps (where the namespace has it
  registered); else, for a run that completed, its result's `usage.total_tokens`, and for a
  running one its `status` query's usage. A run that failed and keeps no `AgentTokens`, or a
  running one no worker answers for within `STATUS_TIMEOUT`, counts 0.
- the starts this process made in the last `RECENT_SECONDS`, which visibility may not show yet
  (it is updated a moment after a start), are added to what it shows.

Windows: runs per minute counts starts in the last 60 seconds; tokens per day the tokens of the
runs started in the last 24 hours (a rolling day). `Retry-After` is when the oldest counted
start leaves its window far enough for the next one to fit; for concurrent runs it is
`CONCURRENCY_RETRY_SECONDS` (a run's end cannot be foreseen).

Starts of one principal are checked one at a time in a process (a lock), so a burst on one
server cannot slip past a limit; two servers starting for the same principal at the same
instant may each admit one more run than the limit.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus

from durable_agents.client.connection import STARTER_MEMO, TENANT_MEMO
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.principals import Principal, PrincipalLimits
from durable_agents.runtime.temporal_client import engine_client
from durable_agents.workflows.search_attributes import AGENT_TOKENS

WORKFLOW_TYPE = "AgentWorkflow"
MINUTE = 60.0
DAY = 86_400.0
RECENT_SECONDS = 30.0
"""How long this process remembers a start of its own (visibility shows it well before)."""
CONCURRENCY_RETRY_SECONDS = 5
STATUS_TIMEOUT = timedelta(seconds=2)


class LimitExceeded(Exception):
    """A start refused by one of the principal's limits: which, why, and when to try again."""

    def __init__(self, limit: str, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.limit = limit
        self.message = message
        self.retry_after = max(1, math.ceil(retry_after))


@dataclass(frozen=True)
class CountedRun:
    """One run a principal started, as the limits count it."""

    workflow_id: str
    started: float
    """Epoch seconds."""
    running: bool
    tokens: int


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def refill_after(starts: list[float], excess: int, window: float, now: float) -> float:
    """Seconds until `excess` of the oldest `starts` have left a `window` ending now."""
    oldest = sorted(starts)[excess - 1]
    return oldest + window - now


def tokens_refill_after(runs: list[CountedRun], limit: int, now: float) -> float:
    """Seconds until the runs that leave the day bring the total under `limit`."""
    total = sum(run.tokens for run in runs)
    for run in sorted(runs, key=lambda r: r.started):
        total -= run.tokens
        if total < limit:
            return run.started + DAY - now
    return DAY


class StartLimits:
    """Checks the `PrincipalLimits` of each start (see the module docstring)."""

    def __init__(self, client: Client, clock: Callable[[], float] = time.time) -> None:
        self.client = engine_client(client)
        self.clock = clock
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._recent: defaultdict[str, dict[str, float]] = defaultdict(dict)
        self._closed_tokens: dict[str, int] = {}

    @asynccontextmanager
    async def admitted(self, principal: Principal | None) -> AsyncIterator[Callable[[str], None]]:
        """Check `principal`'s limits (`LimitExceeded`), then hold its turn while the caller
        starts the run; call the function it yields with the new workflow id."""
        if principal is None or principal.limits == PrincipalLimits():
            yield lambda _: None
            return
        key = f"{principal.tenant}/{principal.name}"
        async with self._locks[key]:
            await self.check(principal)
            yield lambda workflow_id: self._recent[key].__setitem__(workflow_id, self.clock())

    async def check(self, principal: Principal) -> None:
        """`LimitExceeded` if one more run would break a limit of `principal`."""
        limits, now = principal.limits, self.clock()
        runs = await self.counted_runs(principal, now)
        if limits.runs_per_minute is not None:
            starts = [r.started for r in runs if r.started > now - MINUTE]
            excess = len(starts) - limits.runs_per_minute + 1
            if excess > 0:
                raise LimitExceeded(
                    "runs_per_minute",
                    f"{principal.name!r} started {len(starts)} runs in the last minute; "
                    f"its limit is {limits.runs_per_minute} a minute",
                    refill_after(starts, excess, MINUTE, now),
                )
        if limits.concurrent_runs is not None:
            running = sum(r.running for r in runs)
            if running >= limits.concurrent_runs:
                raise LimitExceeded(
                    "concurrent_runs",
                    f"{principal.name!r} has {running} runs running; its limit is "
                    f"{limits.concurrent_runs} at once",
                    CONCURRENCY_RETRY_SECONDS,
                )
        if limits.tokens_per_day is not None:
            day = [r for r in runs if r.started > now - DAY]
            used = sum(r.tokens for r in day)
            if used >= limits.tokens_per_day:
                raise LimitExceeded(
                    "tokens_per_day",
                    f"the runs {principal.name!r} started in the last 24 hours used {used} "
                    f"tokens; its limit is {limits.tokens_per_day} a day",
                    tokens_refill_after(day, limits.tokens_per_day, now),
                )

    async def counted_runs(self, principal: Principal, now: float) -> list[CountedRun]:
        """The principal's runs that any of its limits counts: those started within the
        longest window, those still running, and this process's recent starts."""
        window = DAY if principal.limits.tokens_per_day is not None else MINUTE
        query = (
            f"WorkflowType = '{WORKFLOW_TYPE}' AND "
            f"(StartTime > '{_iso(now - window)}' OR ExecutionStatus = 'Running')"
        )
        found: dict[str, CountedRun] = {}
        async for execution in self.client.list_workflows(query):
            try:
                memo = await execution.memo()
            except Exception:  # a memo this server cannot decode: not one it started
                continue
            if (memo.get(STARTER_MEMO), memo.get(TENANT_MEMO)) != (
                principal.name,
                principal.tenant,
            ):
                continue
            found.setdefault(execution.id, await self._counted(execution))
        key = f"{principal.tenant}/{principal.name}"
        recent = self._recent[key]
        for workflow_id, started in list(recent.items()):
            if started < now - RECENT_SECONDS:
                del recent[workflow_id]
            elif workflow_id not in found:
                found[workflow_id] = CountedRun(workflow_id, started, running=True, tokens=0)
        return list(found.values())

    async def _counted(self, execution: WorkflowExecution) -> CountedRun:
        running = execution.status == WorkflowExecutionStatus.RUNNING
        tokens = execution.typed_search_attributes.get(AGENT_TOKENS)
        if tokens is None:
            read = self._status_tokens if running else self._result_tokens
            tokens = await read(execution)
        return CountedRun(execution.id, execution.start_time.timestamp(), running, tokens)

    async def _status_tokens(self, execution: WorkflowExecution) -> int:
        """A running run's tokens so far, from its `status` query (0 when no worker answers)."""
        handle = self.client.get_workflow_handle(execution.id, run_id=execution.run_id)
        try:
            status = await handle.query(
                "status", result_type=AgentStatus, rpc_timeout=STATUS_TIMEOUT
            )
        except Exception:  # no worker answered in time: nothing known to count
            return 0
        return status.usage.total_tokens

    async def _result_tokens(self, execution: WorkflowExecution) -> int:
        """A closed run's tokens from its result (0 when it has none); kept, since a closed
        run's result never changes."""
        if execution.run_id in self._closed_tokens:
            return self._closed_tokens[execution.run_id]
        tokens = 0
        if execution.status == WorkflowExecutionStatus.COMPLETED:
            handle = self.client.get_workflow_handle(
                execution.id, run_id=execution.run_id, result_type=AgentResult
            )
            try:
                result = await handle.result(follow_runs=False)
                tokens = result.usage.total_tokens
            except Exception:  # continued as new, or not an AgentResult: nothing to count
                tokens = 0
        self._closed_tokens[execution.run_id] = tokens
        return tokens


def install(app: FastAPI) -> None:
    """Answer `LimitExceeded` as 429 with `Retry-After` (seconds) and the limit's name."""

    @app.exception_handler(LimitExceeded)
    async def limit_exceeded(_: Request, error: LimitExceeded) -> JSONResponse:
        return JSONResponse(
            {"error": error.message, "limit": error.limit, "retry_after": error.retry_after},
            status_code=429,
            headers={"Retry-After": str(error.retry_after)},
        )
