"""`tests.hang_guard`: a test that never finishes fails with a clear message instead of hanging
the suite; a test that finishes, or that raises its own TimeoutError, is left alone."""

from __future__ import annotations

import asyncio

import pytest

from tests.hang_guard import TEST_DEADLINE_SECONDS, with_deadline


async def test_a_hung_test_fails_naming_itself_and_the_likely_cause() -> None:
    async def hangs() -> None:
        await asyncio.Event().wait()

    with pytest.raises(AssertionError) as caught:
        await with_deadline(hangs, "tests/x.py::test_hangs", seconds=0.05)()
    message = str(caught.value)
    assert "tests/x.py::test_hangs did not finish within 0.05s" in message
    assert "WorkflowTaskFailed" in message


async def test_a_finished_test_is_unchanged() -> None:
    async def adds(a: int, *, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    assert await with_deadline(adds, "t", seconds=5)(1, b=2) == 3


async def test_the_tests_own_timeout_error_is_not_reported_as_a_hang() -> None:
    async def times_out() -> None:
        raise TimeoutError("the test's own")

    with pytest.raises(TimeoutError, match="the test's own"):
        await with_deadline(times_out, "t", seconds=5)()


async def test_async_tests_of_this_suite_run_under_the_guard(
    request: pytest.FixtureRequest,
) -> None:
    assert getattr(request.node.obj, "hang_guard_seconds", None) == TEST_DEADLINE_SECONDS
