"""Output types: pydantic models an application registers, next to its tools, so a run can ask
for a typed answer by name (`"output_type": "WeatherReport"`) instead of a JSON Schema."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel


class OutputTypes:
    """Output models by name (the class name unless another is given)."""

    def __init__(self, models: Iterable[type[BaseModel]] = ()) -> None:
        self._models: dict[str, type[BaseModel]] = {}
        for model in models:
            self.register(model)

    def register(self, model: type[BaseModel], name: str | None = None) -> type[BaseModel]:
        """Add `model` (usable as a class decorator); a second model with the same name is an
        error."""
        key = name or model.__name__
        if key in self._models:
            raise ValueError(f"an output type named {key!r} is already registered")
        self._models[key] = model
        return model

    def get(self, name: str) -> type[BaseModel] | None:
        return self._models.get(name)

    def names(self) -> list[str]:
        return list(self._models)

    def as_dict(self) -> dict[str, type[BaseModel]]:
        return dict(self._models)
