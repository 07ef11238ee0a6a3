"""The JSON schemas of the plan's own tools (`submit_plan`, `report_check`), compact.

A provider counts a tool's schema in the prompt of every call that offers it. Pydantic's schema
of a model carries what a model answering the call does not need: a `title` for every field, the
class docstrings (written for this project's readers), and `{"anyOf": [X, {"type": "null"}],
"default": null}` for every optional field. `compact_schema` drops those (an optional field is
its type alone: leaving it out is how a model says "none"); the field descriptions and every
constraint stay. The pydantic model still validates what comes back.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

_NULL = {"type": "null"}
_NAMED = ("properties", "$defs")
"""Keywords whose value maps names (a field may be called `title`) to schemas."""


def model_parameters(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema, compact: the parameters of a tool answered with `model`."""
    compacted = compact_schema(model.model_json_schema())
    return compacted if isinstance(compacted, dict) else {}


def compact_schema(schema: Any) -> Any:
    """`schema` without titles, object docstrings and the `null` branch of optional fields."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" or (key == "description" and "properties" in schema):
            continue
        if key in _NAMED and isinstance(value, dict):  # names, not keywords: each one stays
            kept[key] = {name: compact_schema(item) for name, item in value.items()}
        else:
            kept[key] = compact_schema(value)
    options = kept.get("anyOf")
    if isinstance(options, list) and _NULL in options and kept.get("default", ...) is None:
        rest = [option for option in options if option != _NULL]
        kept = {key: value for key, value in kept.items() if key not in ("anyOf", "default")}
        kept = {**(rest[0] if len(rest) == 1 else {"anyOf": rest}), **kept}
    return kept
