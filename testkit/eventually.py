"""Wait for something that happens elsewhere (a worker, the Temporal server, a process).

Tests never sleep "long enough" and never assert on wall time: they wait until what they need
has happened, with one generous deadline that only matters when it never happens (then the
failure says what was last seen instead of hanging the suite).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0
"""A deadline for things that take well under a second when all is well; a hang guard only."""

DEFAULT_INTERVAL = 0.05


_NOTHING = object()


@overload
async def eventually(
    probe: Callable[[], Awaitable[T]],
    *,
    timeout: float = ...,
    interval: float = ...,
    what: str = ...,
    retry_on: tuple[type[BaseException], ...] = ...,
) -> T: ...


@overload
async def eventually(
    probe: Callable[[], T],
    *,
    timeout: float = ...,
    interval: float = ...,
    what: str = ...,
    retry_on: tuple[type[BaseException], ...] = ...,
) -> T: ...


async def eventually(
    probe: Callable[[], Any],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = DEFAULT_INTERVAL,
    what: str = "the condition",
    retry_on: tuple[type[BaseException], ...] = (AssertionError,),
) -> Any:
    """Call `probe` (sync or async) until it returns a truthy value, and return that value.

    A probe may also assert: an exception in `retry_on` (by default `AssertionError`) counts as
    "not yet". Any other exception propagates at once. When `timeout` seconds pass without
    success, raise an `AssertionError` that names `what` and reports the last observation (the
    last value returned, or the last exception raised, which is also chained as the cause).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last_value: object = _NOTHING
    last_error: BaseException | None = None
    attempts = 0
    while True:
        attempts += 1
        try:
            outcome = probe()
            value = await outcome if inspect.isawaitable(outcome) else outcome
        except retry_on as error:
            last_error, last_value = error, _NOTHING
        else:
            if value:
                return value
            last_value, last_error = value, None
        if loop.time() >= deadline:
            break
        await asyncio.sleep(interval)
    if last_error is not None:
        seen = f"last raised {type(last_error).__name__}: {last_error}"
    else:
        seen = f"last returned {last_value!r}"
    raise AssertionError(
        f"timed out after {timeout}s ({attempts} tries) waiting for {what}; {seen}"
    ) from last_error
