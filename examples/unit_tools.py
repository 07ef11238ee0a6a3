"""An example of a tool module that `AGENT_TOOL_MODULES` loads: `convert_units`.

    AGENT_TOOL_MODULES=examples.unit_tools make run

The worker imports each module named in `AGENT_TOOL_MODULES` (comma-separated, importable from
the worker's folder) before it starts polling; importing this one registers its tool in the
application's `REGISTRY`, so every run may call it (`"tools": ["convert_units"]` limits a run
to it) and the worker's banner lists it. Register a tool only once, at import, and give it the
same name on every worker of the task queue: the name is the activity type. Your own module is
the same shape: a pydantic argument model (the JSON schema the model sees, with a description
per field), one async function whose docstring is the tool's description, `ToolError` for what
the model should correct, and `REGISTRY.register` at the end.

`convert_units` is pure (no I/O, no clock), so it runs as a local activity (`local=True`): one
marker in the history instead of three activity events. The offline demo model never calls it
(it knows only `calculator` and `current_time`); a real model, or the scripted fake server of
`tests/test_tool_modules.py`, does.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from durable_agents.tools.catalog import REGISTRY
from durable_agents.tools.definition import ToolError, tool

UNITS: dict[str, tuple[str, float]] = {
    # unit: (dimension, size in the dimension's base unit: metre, kilogram, second)
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "yd": ("length", 0.9144),
    "mi": ("length", 1609.344),
    "g": ("mass", 0.001),
    "kg": ("mass", 1.0),
    "oz": ("mass", 0.028349523125),
    "lb": ("mass", 0.45359237),
    "s": ("time", 1.0),
    "min": ("time", 60.0),
    "h": ("time", 3600.0),
    "day": ("time", 86400.0),
}
TEMPERATURES = ("C", "F", "K")


class ConvertArgs(BaseModel):
    value: float = Field(description="The amount to convert, e.g. 10")
    from_unit: str = Field(
        description="Its unit: mm cm m km in ft yd mi g kg oz lb s min h day C F K"
    )
    to_unit: str = Field(
        description="The unit wanted, of the same kind (length, mass, time, temperature)"
    )


def to_kelvin(value: float, unit: str) -> float:
    return {"C": value + 273.15, "F": (value - 32) * 5 / 9 + 273.15, "K": value}[unit]


def from_kelvin(kelvin: float, unit: str) -> float:
    return {"C": kelvin - 273.15, "F": (kelvin - 273.15) * 9 / 5 + 32, "K": kelvin}[unit]


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """`value` in `from_unit`, expressed in `to_unit`; `ToolError` names what does not fit."""
    if from_unit in TEMPERATURES and to_unit in TEMPERATURES:
        return from_kelvin(to_kelvin(value, from_unit), to_unit)
    known = [*UNITS, *TEMPERATURES]
    for unit in (from_unit, to_unit):
        if unit not in known:
            raise ToolError(f"unknown unit {unit!r}; known units: {' '.join(known)}")
    source = UNITS.get(from_unit, ("temperature", 0.0))
    target = UNITS.get(to_unit, ("temperature", 0.0))
    if source[0] != target[0]:
        raise ToolError(f"cannot convert {source[0]} ({from_unit}) to {target[0]} ({to_unit})")
    return value * source[1] / target[1]


@tool(local=True)
async def convert_units(args: ConvertArgs) -> str:
    """Convert an amount between units of length, mass, time or temperature."""
    result = convert(args.value, args.from_unit.strip(), args.to_unit.strip())
    return f"{args.value:g} {args.from_unit.strip()} = {result:.6g} {args.to_unit.strip()}"


if REGISTRY.get(convert_units.name) is None:  # imported twice (tests, reloads): registered once
    REGISTRY.register(convert_units)
