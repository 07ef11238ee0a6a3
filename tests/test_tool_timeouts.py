"""Tool timeouts (seed 001's exercise, issue 23 item 4, issue 31 item 3): a tool that exceeds its
start-to-close timeout becomes `Error: timed out after Ns` for the model at once, without retries;
a tool that opts in (its own `retry_policy`, or `retry_on_timeout=True`) is retried and its
observation names the attempts; `retry_on_timeout=False` keeps a tool's own policy off its
timeouts. Real worker, real Temporal server, scripted model; attempts are read from the history
and the tools' counters.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import BaseModel
from temporalio.common import RetryPolicy
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.context_cache import ContextCache
from durable_agents.tools.definition import ToolContext, ToolOptions, tool
from durable_agents.workflows.callees.activity import START_TO_CLOSE_TIMEOUT, activity_retry_policy
from tests.catalog import TEST_CATALOG
from tests.conftest import ScriptedHarness, activity_types, started_workers
from tests.scripted_model import ScriptedChatModel, call, text, tool_calls
from tests.test_tool_retries import attempts_in_history

started: dict[str, int] = defaultdict(int)
"""Attempts each call started (by idempotency key)."""

QUICK_RETRY = RetryPolicy(
    maximum_attempts=3,
    initial_interval=timedelta(seconds=0.1),
    maximum_interval=timedelta(seconds=0.2),
)


class NapArgs(BaseModel):
    seconds: float
    first_attempt_only: bool = False


async def nap(args: NapArgs, ctx: ToolContext) -> str:
    """What the slow tools do: count the attempt, take `args.seconds`, find it."""
    started[ctx.idempotency_key] += 1
    await asyncio.sleep(args.seconds)
    return "found"


@tool(start_to_close_timeout=timedelta(seconds=1))
async def slow_lookup(args: NapArgs, ctx: ToolContext) -> str:
    """Look something up slowly (longer than its one-second limit)."""
    return await nap(args, ctx)


@tool(start_to_close_timeout=timedelta(seconds=1), retry_on_timeout=True, retry_policy=QUICK_RETRY)
async def patient_lookup(args: NapArgs, ctx: ToolContext) -> str:
    """Look something up slowly; timed-out attempts are retried."""
    started[ctx.idempotency_key] += 1
    if started[ctx.idempotency_key] == 1 or not args.first_attempt_only:
        await asyncio.sleep(args.seconds)
    return f"found on attempt {started[ctx.idempotency_key]}"


@tool(start_to_close_timeout=timedelta(seconds=1), retry_policy=QUICK_RETRY)
async def policy_lookup(args: NapArgs, ctx: ToolContext) -> str:
    """Look something up slowly; the tool gives its own retry policy (and nothing else)."""
    return await nap(args, ctx)


@tool(start_to_close_timeout=timedelta(seconds=1), retry_policy=QUICK_RETRY, retry_on_timeout=False)
async def hasty_lookup(args: NapArgs, ctx: ToolContext) -> str:
    """Look something up slowly; its own retry policy, but timeouts are final."""
    return await nap(args, ctx)


CATALOG = TEST_CATALOG.extended(tools=[slow_lookup, patient_lookup, policy_lookup, hasty_lookup])


@pytest.fixture
async def harness(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[ScriptedHarness]:
    model = ScriptedChatModel()
    cache = ContextCache()
    async with AsyncExitStack() as stack:
        queue = await started_workers(
            stack, temporal_env.client, model, tmp_path, context_cache=cache, catalog=CATALOG
        )
        yield ScriptedHarness(temporal_env.client, queue, tmp_path, cache, model=model)


async def test_a_timed_out_call_goes_to_the_model_at_once(harness: ScriptedHarness) -> None:
    harness.model.enqueue(
        tool_calls(call("slow_lookup", {"seconds": 30}, id="s1")), text("It was too slow.")
    )
    result, handle = await harness.run({"prompt": "look it up", "tools": ["slow_lookup"]})

    [step] = result.steps
    assert (step.status, step.observation) == ("error", "Error: timed out after 1s")
    assert started[f"{handle.id}/1/s1"] == 1  # the slow logic ran once
    assert await attempts_in_history(handle, "slow_lookup") == [1]
    assert await activity_types(handle) == ["call_model", "slow_lookup", "call_model"]
    sent = [m.content for m in harness.model.requests[1].messages if m.role == "tool"]
    assert sent == ["Error: timed out after 1s"]
    assert result.answer == "It was too slow."


async def test_a_tool_that_opts_in_is_retried_and_the_observation_names_the_attempts(
    harness: ScriptedHarness,
) -> None:
    harness.model.enqueue(tool_calls(call("patient_lookup", {"seconds": 30}, id="p1")), text("no"))
    result, handle = await harness.run({"prompt": "look it up", "tools": ["patient_lookup"]})

    [step] = result.steps
    assert (step.status, step.observation) == (
        "error",
        "Error: timed out after 1s (3 attempts)",
    )
    assert started[f"{handle.id}/1/p1"] == 3
    assert await attempts_in_history(handle, "patient_lookup") == [3]


async def test_an_opted_in_tool_recovers_from_a_timed_out_attempt(
    harness: ScriptedHarness,
) -> None:
    harness.model.enqueue(
        tool_calls(call("patient_lookup", {"seconds": 30, "first_attempt_only": True}, id="q1")),
        text("done"),
    )
    result, handle = await harness.run({"prompt": "x", "tools": ["patient_lookup"]})

    assert [(s.status, s.observation) for s in result.steps] == [("ok", "found on attempt 2")]
    assert await attempts_in_history(handle, "patient_lookup") == [2]


async def test_a_tool_with_its_own_retry_policy_retries_its_timeouts(
    harness: ScriptedHarness,
) -> None:
    """An explicit retry policy wins over the default of no retry on timeout (issue 31 item 3:
    before, this ran once and history showed attempt 1 and NON_RETRYABLE_FAILURE)."""
    harness.model.enqueue(tool_calls(call("policy_lookup", {"seconds": 30}, id="r1")), text("no"))
    result, handle = await harness.run({"prompt": "look it up", "tools": ["policy_lookup"]})

    [step] = result.steps
    assert (step.status, step.observation) == ("error", "Error: timed out after 1s (3 attempts)")
    assert started[f"{handle.id}/1/r1"] == 3
    assert await attempts_in_history(handle, "policy_lookup") == [3]
    sent = [m.content for m in harness.model.requests[1].messages if m.role == "tool"]
    assert sent == ["Error: timed out after 1s (3 attempts)"]


async def test_retry_on_timeout_false_keeps_a_tools_own_policy_off_its_timeouts(
    harness: ScriptedHarness,
) -> None:
    harness.model.enqueue(tool_calls(call("hasty_lookup", {"seconds": 30}, id="h1")), text("no"))
    result, handle = await harness.run({"prompt": "look it up", "tools": ["hasty_lookup"]})

    assert [(s.status, s.observation) for s in result.steps] == [
        ("error", "Error: timed out after 1s")
    ]
    assert started[f"{handle.id}/1/h1"] == 1
    assert await attempts_in_history(handle, "hasty_lookup") == [1]


def test_only_an_opted_in_tool_retries_a_start_to_close_timeout() -> None:
    default = activity_retry_policy(ToolOptions())
    assert START_TO_CLOSE_TIMEOUT in (default.non_retryable_error_types or [])
    assert default.maximum_attempts == 3  # transient failures are still retried
    opted = activity_retry_policy(ToolOptions(retry_on_timeout=True))
    assert START_TO_CLOSE_TIMEOUT not in (opted.non_retryable_error_types or [])
    own = activity_retry_policy(ToolOptions(retry_policy=QUICK_RETRY))
    assert START_TO_CLOSE_TIMEOUT not in (own.non_retryable_error_types or [])
    refused = activity_retry_policy(ToolOptions(retry_policy=QUICK_RETRY, retry_on_timeout=False))
    assert START_TO_CLOSE_TIMEOUT in (refused.non_retryable_error_types or [])
