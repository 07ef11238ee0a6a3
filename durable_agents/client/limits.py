"""Limits per principal (issue 35 item 4), enforced by `AgentClient` at every start: runs
started per minute, runs running at once, and model tokens per day, each from the starting
principal's `PrincipalLimits` (the principals file:
`limits = { runs_per_minute = 10, concurrent_runs = 3, tokens_per_day = 200000 }`).

Every start goes through `AgentClient`, so every interface enforces the same limits at the same
place: a run (`start`, `start_input`: `POST /v1/runs`, MCP's `run_agent`, an A2A task), a
session (`start_session`: `POST /v1/sessions`), and a message to a session, which starts a turn
(`SessionHandle.send_nowait`: `POST /v1/sessions/{id}/messages`, AG-UI, MCP's `send_message`).
One that would break a limit is refused before any workflow starts or any message is sent:
`durable_agents.errors.LimitExceeded`, which each interface answers in its own form (HTTP 429
with `Retry-After`, an MCP tool error, a `rejected` A2A task). A client without a principal, or
whose principal has no limits, checks nothing.

What counts (read from Temporal at each checked start, so a restart of the server resets
nothing):
- `runs_per_minute`: the runs and sessions the principal started in the last 60 s (their memo
  names it: `starter`, and its `tenant`). A message to a session that exists starts a turn,
  not a run: it is checked against every limit, but is not counted as a start;
- `concurrent_runs`: its `AgentWorkflow` runs still running (a session, which mostly waits
  for its next message, is not one);
- `tokens_per_day`: the tokens of its runs and sessions started in the last 24 hours (a
  rolling day): a run's or session's `AgentTokens` search attribute where the namespace keeps
  it; else a running one's `status` query usage, a completed one's result usage
  (`AgentClient.tokens_used`). One that failed (or was cancelled) and keeps no `AgentTokens`
  counts 0, as does a running one no worker answers for within `STATUS_TIMEOUT`;
- the starts this process made in the last `RECENT_SECONDS`, which visibility may not show yet
  (it is updated a moment after a start), are added to what it shows.

`Retry-After` is when the oldest counted start leaves its window far enough for the next one to
fit; for concurrent runs it is `CONCURRENCY_RETRY_SECONDS` (a run's end cannot be foreseen).

Starts of one principal are checked one at a time in a process (a lock held while the start is
made), so a burst on one server cannot slip past a limit; two servers starting for the same
principal at the same instant may each admit one more run than the limit.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from durable_agents.client.workflow_calls import SESSION_TYPE, WORKFLOW_TYPE
from durable_agents.contracts.principals import Principal, PrincipalLimits
from durable_agents.errors import LimitExceeded

if TYPE_CHECKING:
    from durable_agents.client.client import AgentClient, ListedRun

MINUTE = 60.0
DAY = 86_400.0
RECENT_SECONDS = 30.0
"""How long this process remembers a start of its own (visibility shows it well before)."""
CONCURRENCY_RETRY_SECONDS = 5
STATUS_TIMEOUT = timedelta(seconds=2)

Started = Callable[[str, bool], None]
"""Called by the one who was admitted with the workflow id it started, and whether it is a run
(True) or a session (False, not counted as running)."""


@dataclass(frozen=True)
class CountedRun:
    """One run or session a principal started, as the limits count it."""

    workflow_id: str
    started: float
    """Epoch seconds."""
    running: bool
    """A run (not a session) that is still running."""
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


def _key(principal: Principal) -> str:
    return f"{principal.tenant}/{principal.name}"


class StartLimits:
    """The `PrincipalLimits` of each start (see the module docstring): one per process, shared
    by an `AgentClient` and every copy `as_principal` makes of it."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._recent: defaultdict[str, dict[str, tuple[float, bool]]] = defaultdict(dict)
        self._closed_tokens: dict[str, int] = {}

    @asynccontextmanager
    async def admitted(self, agents: AgentClient) -> AsyncIterator[Started]:
        """Check the limits of `agents`' principal (`LimitExceeded`), then hold its turn while
        the caller starts; call the function it yields with what was started."""
        principal = agents.principal
        if principal is None or principal.limits == PrincipalLimits():
            yield lambda _id, _run: None
            return
        key = _key(principal)
        async with self._locks[key]:
            await self.check(agents, principal)

            def started(workflow_id: str, run: bool) -> None:
                self._recent[key][workflow_id] = (self.clock(), run)

            yield started

    async def check(self, agents: AgentClient, principal: Principal) -> None:
        """`LimitExceeded` if one more start would break a limit of `principal`."""
        limits, now = principal.limits, self.clock()
        runs = await self.counted_runs(agents, principal, now)
        if limits.runs_per_minute is not None:
            starts = [r.started for r in runs if r.started > now - MINUTE]
            excess = len(starts) - limits.runs_per_minute + 1
            if excess > 0:
                raise LimitExceeded(
                    "runs_per_minute",
                    f"{principal.name!r} started {len(starts)} "
                    f"{'run' if len(starts) == 1 else 'runs'} in the last minute; "
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

    async def counted_runs(
        self, agents: AgentClient, principal: Principal, now: float
    ) -> list[CountedRun]:
        """The principal's runs and sessions that any of its limits counts: those started
        within the longest window, those still running, and this process's recent starts."""
        window = DAY if principal.limits.tokens_per_day is not None else MINUTE
        query = f"StartTime > '{_iso(now - window)}' OR ExecutionStatus = 'Running'"
        found: dict[str, CountedRun] = {}
        async for listed in agents.listed(query, types=(WORKFLOW_TYPE, SESSION_TYPE)):
            if (listed.starter, listed.tenant) != (principal.name, principal.tenant):
                continue
            if listed.workflow_id not in found:
                found[listed.workflow_id] = await self._counted(agents, listed)
        recent = self._recent[_key(principal)]
        for workflow_id, (started, run) in list(recent.items()):
            if started < now - RECENT_SECONDS:
                del recent[workflow_id]
            elif workflow_id not in found:
                found[workflow_id] = CountedRun(workflow_id, started, running=run, tokens=0)
        return list(found.values())

    async def _counted(self, agents: AgentClient, listed: ListedRun) -> CountedRun:
        """`listed` as counted; a closed one's tokens are kept (they never change)."""
        running = listed.status == "RUNNING"
        tokens = self._closed_tokens.get(listed.run_id)
        if tokens is None:
            tokens = await agents.tokens_used(listed, timeout=STATUS_TIMEOUT)
            if not running:
                self._closed_tokens[listed.run_id] = tokens
        is_run = listed.workflow_type == WORKFLOW_TYPE
        return CountedRun(listed.workflow_id, listed.started_at, running and is_run, tokens)
