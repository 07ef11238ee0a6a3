"""Fields left out of the JSON while unset.

Messages and model requests are recorded in history on every model call; a message's unset
fields (`"tool_calls": []`, `"tool_call_id": null`, ...) were a fifth of a short message's
bytes. Reading the JSON back gives the same model: the defaults fill in.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field


def _is_none(value: object) -> bool:
    return value is None


def _is_empty(value: object) -> bool:
    return not value


def none_omitted(**field: Any) -> Any:
    """A field that defaults to None and is left out of the JSON while None."""
    return Field(default=None, exclude_if=_is_none, **field)


def empty_omitted(**field: Any) -> Any:
    """A list field that defaults to empty and is left out of the JSON while empty."""
    return Field(default_factory=list, exclude_if=_is_empty, **field)


def false_omitted(**field: Any) -> Any:
    """A flag that defaults to False and is left out of the JSON while False."""
    return Field(default=False, exclude_if=_is_empty, **field)


def default_omitted(default: int, **field: Any) -> Any:
    """A number (or a flag that defaults to True) left out of the JSON while it is `default`."""
    return Field(default=default, exclude_if=lambda value: value == default, **field)
