"""Is decoded JSON input safe to hold in a run? Checked before any model validation, on every
payload people send (a run's or a session's start, each signal, each update).

JSON can carry values that decode and validate but break a run later, when the workflow
encodes them again (an activity's input, a continue-as-new, a query result) or turns them into
a timer or a counter:

- an unpaired UTF-16 surrogate (`"\\ud800"`) decodes into a Python string that no UTF-8
  encoder accepts;
- nesting thousands of levels deep overflows recursive encoders and validators;
- integers beyond 2**53 lose precision in every JavaScript client (the Web UI) and overflow
  timers; `NaN` and `Infinity` are not JSON at all, yet many decoders accept them.

`shape_problem` names the first such value by its path (`history.0.content`), in the style of
`describe_validation_error`, or returns None.
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 32
"""Deepest nesting accepted (the deepest of our own inputs, a tool's edited arguments inside a
signal, needs well under 10 levels)."""

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer every JSON client reads exactly (JavaScript's Number.MAX_SAFE_INTEGER)."""


def shape_problem(value: Any, *, max_depth: int = MAX_DEPTH) -> str | None:
    """The first value in `value` that cannot be held safely, as `path: problem`; or None.

    Walks iteratively, so the check itself cannot overflow the stack on deep input."""
    stack: list[tuple[str, Any, int]] = [("", value, 0)]
    while stack:
        path, item, depth = stack.pop()
        where = path or "input"
        if isinstance(item, dict | list | tuple):
            if depth >= max_depth:
                return f"{where}: nested deeper than {max_depth} levels"
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in reversed(list(children)):
                if isinstance(key, str) and (problem := _text_problem(key)):
                    return f"{where}: a key holds {problem}"
                stack.append((f"{path}.{key}" if path else str(key), child, depth + 1))
        elif isinstance(item, str):
            if problem := _text_problem(item):
                return f"{where}: {problem}"
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if abs(item) > MAX_SAFE_INTEGER:
                return (
                    f"{where}: a number of {item.bit_length()} bits is out of range (at most "
                    f"{MAX_SAFE_INTEGER})"
                )
        elif isinstance(item, float) and not math.isfinite(item):
            return f"{where}: {item} is not a finite number"
    return None


def _text_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"invalid unicode (an unpaired surrogate at character {error.start})"
    return None
