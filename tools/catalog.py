"""The tools this application offers: the one place a tool is registered.

Adding a tool = writing its function (see `tools.definition`) and listing it here; no loop code
changes. The workflow reads schemas and argument models from `REGISTRY`; the worker turns each
entry into an activity named after the tool. Output types (pydantic models a run can name as
`output_type`) are registered here too.
"""

from __future__ import annotations

from tools.builtin.ask_user import ask_user
from tools.builtin.calculator import calculator
from tools.builtin.current_time import current_time
from tools.builtin.files import read_file
from tools.builtin.final_answer import final_answer
from tools.builtin.memory import forget, recall, remember
from tools.builtin.write_file import write_file
from tools.outputs import OutputTypes
from tools.registry import ToolRegistry

REGISTRY = ToolRegistry(
    [
        calculator,
        current_time,
        read_file,
        write_file,
        ask_user,
        final_answer,
        remember,
        recall,
        forget,
    ]
)

OUTPUT_TYPES = OutputTypes()
"""Typed answers a run can ask for by name (`output_type`); register with
`OUTPUT_TYPES.register(Model)`."""
