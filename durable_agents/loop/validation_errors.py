"""pydantic validation errors as one line a person (or a model) can act on."""

from __future__ import annotations

from pydantic import ValidationError


def describe_validation_error(error: ValidationError) -> str:
    """One line per problem: `field.path: message` (the root is called `input`)."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "input"
        lines.append(f"{where}: {problem['msg']}")
    return "; ".join(lines)
