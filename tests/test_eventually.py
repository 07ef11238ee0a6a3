"""`testkit.eventually`: returns what the probe found, waits through "not yet", and when the
deadline passes says what it last saw."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from testkit.eventually import eventually


def counting(results: list[object]) -> Callable[[], object]:
    """A probe that returns `results` one by one (then the last one forever)."""
    calls = iter(results)
    last: list[object] = []

    def probe() -> object:
        value = next(calls, last[0] if last else None)
        last[:] = [value]
        return value

    return probe


async def test_returns_the_first_truthy_value() -> None:
    assert await eventually(counting([None, 0, [], "found"]), interval=0) == "found"


async def test_awaits_an_async_probe() -> None:
    seen: list[int] = []

    async def probe() -> list[int]:
        seen.append(len(seen))
        return seen if len(seen) == 3 else []

    assert await eventually(probe, interval=0) == [0, 1, 2]


async def test_an_assertion_in_the_probe_means_not_yet() -> None:
    tries: list[int] = []

    def probe() -> str:
        tries.append(1)
        assert len(tries) >= 3, f"only {len(tries)} tries"
        return "ok"

    assert await eventually(probe, interval=0) == "ok"
    assert len(tries) == 3


async def test_waits_for_something_another_task_does() -> None:
    flag = asyncio.Event()
    asyncio.get_running_loop().call_soon(flag.set)
    assert await eventually(flag.is_set, interval=0.001)


async def test_failure_reports_the_last_value_and_what_was_awaited() -> None:
    with pytest.raises(AssertionError) as caught:
        await eventually(counting([None, [], 0]), timeout=0.05, interval=0.01, what="the answer")
    message = str(caught.value)
    assert "waiting for the answer" in message
    assert "last returned 0" in message
    assert "timed out after 0.05s" in message


async def test_failure_reports_the_last_assertion_and_chains_it() -> None:
    tries: list[int] = []

    def probe() -> bool:
        tries.append(1)
        raise AssertionError(f"status was thinking at try {len(tries)}")

    with pytest.raises(AssertionError) as caught:
        await eventually(probe, timeout=0.05, interval=0.01)
    message = str(caught.value)
    assert f"last raised AssertionError: status was thinking at try {len(tries)}" in message
    assert isinstance(caught.value.__cause__, AssertionError)
    assert len(tries) >= 2  # it tried again before giving up


async def test_other_exceptions_propagate_at_once() -> None:
    tries: list[int] = []

    def probe() -> bool:
        tries.append(1)
        raise KeyError("no such workflow")

    with pytest.raises(KeyError):
        await eventually(probe, timeout=5, interval=0)
    assert tries == [1]


async def test_retry_on_widens_what_counts_as_not_yet() -> None:
    results: list[object] = [ConnectionError("server restarting"), "up"]

    def probe() -> object:
        value = results.pop(0)
        if isinstance(value, Exception):
            raise value
        return value

    assert await eventually(probe, interval=0, retry_on=(ConnectionError,)) == "up"


async def test_a_probe_is_tried_at_least_once_even_with_no_time() -> None:
    assert await eventually(lambda: "now", timeout=0) == "now"
