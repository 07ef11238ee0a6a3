"""A deadline on every async test, so a test that can never finish fails instead of hanging.

The usual cause: a workflow task that keeps failing (a bug in workflow code, a half-finished
edit). Temporal retries such a task forever, by design, so a test awaiting the run's result
would wait until CI kills the job, without saying why. The deadline is far above any test's
normal run time; it is a hang guard, not a timing assertion.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any

TEST_DEADLINE_SECONDS = 300.0


def with_deadline(
    test: Callable[..., Coroutine[Any, Any, Any]], name: str, seconds: float = TEST_DEADLINE_SECONDS
) -> Callable[..., Coroutine[Any, Any, Any]]:
    """`test`, failing with an `AssertionError` if it has not finished after `seconds`."""

    @functools.wraps(test)
    async def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            async with asyncio.timeout(seconds) as deadline:
                return await test(*args, **kwargs)
        except TimeoutError:
            if not deadline.expired():
                raise  # the test's own TimeoutError
            raise AssertionError(
                f"{name} did not finish within {seconds:g}s and was cancelled (hang guard). "
                "A run awaited forever usually has a workflow task that keeps failing: see the "
                "WorkflowTaskFailed events in its history or the 'workflow task failed' warnings "
                "in the server log above."
            ) from None

    guarded.hang_guard_seconds = seconds  # type: ignore[attr-defined]
    return guarded


def guard(item: Any) -> None:
    """Put the deadline on a collected async test (pytest-asyncio runs `item.obj`)."""
    test = getattr(item, "obj", None)
    if inspect.iscoroutinefunction(test) and not getattr(test, "hypothesis", None):
        item.obj = with_deadline(test, item.nodeid)
