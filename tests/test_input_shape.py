"""`loop.input_shape.shape_problem` alone: what decoded input no run can carry safely."""

from __future__ import annotations

import pytest

from durable_agents.loop.input_shape import MAX_DEPTH, MAX_SAFE_INTEGER, shape_problem


def deep(levels: int) -> list[object]:
    value: list[object] = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"prompt": "a\ud800b"}, "prompt: invalid unicode (an unpaired surrogate at character 1)"),
        ({"a": {"\udc00": 1}}, "a: a key holds invalid unicode"),
        ({"n": MAX_SAFE_INTEGER + 1}, "n: a number of 54 bits is out of range"),
        ({"n": -(10**5000)}, "n: a number of 16610 bits is out of range"),
        ({"x": [1.0, float("nan")]}, "x.1: nan is not a finite number"),
        ({"x": float("-inf")}, "x: -inf is not a finite number"),
        (
            {"a": deep(MAX_DEPTH)},
            "a" + ".0" * (MAX_DEPTH - 1) + f": nested deeper than {MAX_DEPTH} levels",
        ),
        (deep(MAX_DEPTH + 1), "0" + ".0" * (MAX_DEPTH - 1) + ":"),
    ],
)
def test_unsafe_values_are_named_by_their_path(value: object, problem: str) -> None:
    found = shape_problem(value)
    assert found is not None and found.startswith(problem), found


@pytest.mark.parametrize(
    "value",
    [
        {"prompt": "héllo 世界 🙂", "n": MAX_SAFE_INTEGER, "f": -1.5, "b": True, "z": None},
        deep(MAX_DEPTH),
        [],
        "plain",
    ],
)
def test_ordinary_input_passes(value: object) -> None:
    assert shape_problem(value) is None


def test_a_hundred_thousand_levels_are_checked_without_recursion() -> None:
    assert shape_problem(deep(100_000)) is not None
