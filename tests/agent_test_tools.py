"""Tools that exist only for the tests: they fail, stall, flood or wait on each other on purpose.

They join the tests' own catalog (`tests.catalog.TEST_CATALOG`), so the real workflow and the
real worker run them as activities named after them; the application's catalog never sees them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import defaultdict
from datetime import timedelta

from pydantic import BaseModel
from temporalio.common import RetryPolicy

from durable_agents.tools.definition import Tool, ToolContext, ToolError, TransientToolError, tool

FAST_RETRY = RetryPolicy(
    maximum_attempts=3,
    initial_interval=timedelta(seconds=0.1),
    maximum_interval=timedelta(seconds=0.2),
)
NO_RETRY = RetryPolicy(maximum_attempts=1)
attempts: dict[str, int] = defaultdict(int)
executions: dict[str, int] = defaultdict(int)
_arrived: dict[str, int] = defaultdict(int)
_all_arrived: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
gates: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
"""`gated` calls wait for `gates[label]`: a test sets it once it has seen what it wanted to see
while the tool was running (the worker runs in the test's event loop)."""


class EchoArgs(BaseModel):
    text: str


class FlakyArgs(BaseModel):
    failures: int


class SleepArgs(BaseModel):
    seconds: float


class SizeArgs(BaseModel):
    chars: int


class PayArgs(BaseModel):
    amount: float
    to: str


class EffectArgs(BaseModel):
    label: str


class GateArgs(BaseModel):
    label: str


class RendezvousArgs(BaseModel):
    group: str
    size: int
    label: str


@tool()
async def echo(args: EchoArgs, ctx: ToolContext) -> str:
    """Return the text it was given."""
    executions[ctx.idempotency_key] += 1
    return args.text


@tool(retry_policy=FAST_RETRY)
async def flaky(args: FlakyArgs, ctx: ToolContext) -> str:
    """Fail with a transient error `failures` times for this call, then succeed."""
    attempts[ctx.idempotency_key] += 1
    if attempts[ctx.idempotency_key] <= args.failures:
        raise RuntimeError(f"transient failure {attempts[ctx.idempotency_key]}")
    return f"worked on attempt {attempts[ctx.idempotency_key]}"


@tool(retry_policy=FAST_RETRY)
async def always_fails(args: EchoArgs) -> str:
    """Raise an unexpected exception every time."""
    raise RuntimeError(f"disk on fire ({args.text})")


@tool()
async def refuses(args: EchoArgs) -> str:
    """Report an expected failure."""
    raise ToolError(f"cannot do that with {args.text!r}")


@tool(start_to_close_timeout=timedelta(seconds=1), retry_policy=NO_RETRY)
async def sleepy(args: SleepArgs) -> str:
    """Sleep longer than its one-second timeout allows."""
    await asyncio.sleep(args.seconds)
    return "woke up"


@tool()
async def buggy(args: EchoArgs, ctx: ToolContext) -> str:
    """A bug in the tool's own logic: reported to the model at once, never retried."""
    attempts[ctx.idempotency_key] += 1
    raise ValueError(f"cannot parse {args.text!r}")


@tool()
async def blips(args: FlakyArgs, ctx: ToolContext) -> str:
    """Fail transiently (a `TransientToolError`, or a `ConnectionError` on odd attempts)
    `failures` times for this call, then succeed; retried with the default policy."""
    attempts[ctx.idempotency_key] += 1
    attempt = attempts[ctx.idempotency_key]
    if attempt <= args.failures:
        if attempt % 2:
            raise ConnectionError(f"connection reset on attempt {attempt}")
        raise TransientToolError(f"rate limited on attempt {attempt}")
    return f"worked on attempt {attempt}"


@tool(on_error="stop")
async def must_work(args: EchoArgs) -> str:
    """A tool whose failure must stop the run."""
    raise ToolError(f"critical failure: {args.text}")


@tool()
async def big_output(args: SizeArgs) -> str:
    """Return `chars` characters."""
    return "x" * args.chars


@tool(start_to_close_timeout=timedelta(seconds=10), retry_policy=NO_RETRY)
async def rendezvous(args: RendezvousArgs) -> str:
    """Wait until `size` calls of the same group are running at once: proves concurrency."""
    _arrived[args.group] += 1
    if _arrived[args.group] >= args.size:
        _all_arrived[args.group].set()
    try:
        await asyncio.wait_for(_all_arrived[args.group].wait(), timeout=5)
    except TimeoutError:
        raise ToolError(f"{args.label} ran alone: the calls were not concurrent") from None
    return f"{args.label} met {args.size - 1} others"


@tool(start_to_close_timeout=timedelta(seconds=120), retry_policy=NO_RETRY)
async def gated(args: GateArgs) -> str:
    """Run until the test opens `gates[label]`: a tool call that is in flight for as long as the
    test needs, without sleeping."""
    await gates[args.label].wait()
    return f"released {args.label}"


@tool(requires_approval=lambda args: args.amount > 100)
async def pay(args: PayArgs) -> str:
    """Pay an amount; more than 100 needs a person's approval."""
    return f"paid {args.amount:g} to {args.to}"


@tool(requires_approval=True)
async def side_effect(args: EffectArgs, ctx: ToolContext) -> str:
    """A side effect that must happen at most once; counts its executions."""
    executions[ctx.idempotency_key] += 1
    return f"did {args.label}"


class QueryArgs(BaseModel):
    query: str


@tool()
async def broken_lookup(args: QueryArgs) -> str:
    """Always fails the same way, whatever it is asked."""
    raise ToolError("the lookup service is down")


@tool(start_to_close_timeout=timedelta(seconds=120), retry_policy=NO_RETRY)
async def slow_tool(args: SleepArgs, ctx: ToolContext) -> str:
    """Sleep for a long time (to be cancelled); records that it started and was cancelled."""
    executions[f"started:{ctx.idempotency_key}"] += 1
    try:
        await asyncio.sleep(args.seconds)
    except asyncio.CancelledError:
        executions[f"cancelled:{ctx.idempotency_key}"] += 1
        raise
    return "slept"


def local_twin(item: Tool) -> Tool:
    """`item` again as `local_<name>` with `local=True`: the same function and options, run as a
    local activity, so a test can compare the two paths call for call."""
    options = dataclasses.replace(item.options, local=True)
    return dataclasses.replace(item, name=f"local_{item.name}", options=options)


class NapArgs(BaseModel):
    seconds: float


@tool(start_to_close_timeout=timedelta(seconds=10), local=True)
async def local_nap(args: NapArgs) -> str:
    """Sleep a little (longer than a heartbeat interval), then answer: a slow local tool."""
    await asyncio.sleep(args.seconds)
    return f"napped {args.seconds:g}s"


LOCAL_TWINS = [
    local_twin(item)
    for item in (echo, buggy, refuses, sleepy, always_fails, blips, must_work, slow_tool)
]

TEST_TOOLS = [
    echo, flaky, always_fails, buggy, blips, refuses, sleepy, must_work, big_output, rendezvous,
    gated, pay, side_effect, broken_lookup, slow_tool, local_nap, *LOCAL_TWINS,
]  # fmt: skip
