"""The event stream's state, as a run or a session carries it across continue-as-new.

`temporalio.contrib.workflow_streams.WorkflowStreamState` is a dataclass; the workflow inputs
are strict pydantic models, which take a dataclass field only as an instance. `StreamState`
reads the JSON form (a dict) into the dataclass first, so the carried field stays typed
`WorkflowStreamState | None` (the SDK's rule: never `Any`, or the state arrives as a plain dict).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, TypeAdapter
from temporalio.contrib.workflow_streams import WorkflowStreamState

_STATE = TypeAdapter(WorkflowStreamState)


def read_stream_state(value: Any) -> WorkflowStreamState | None:
    """`value` as a `WorkflowStreamState` (its JSON form, or one already), or None."""
    if value is None or isinstance(value, WorkflowStreamState):
        return value
    return _STATE.validate_python(value, strict=False)


StreamState = Annotated[
    WorkflowStreamState | None,
    BeforeValidator(read_stream_state),
    Field(
        exclude_if=lambda value: value is None,
        description="Set by the workflow itself when it continues-as-new: its event stream "
        "(retained events, offsets, publishers' de-duplication state).",
    ),
]
"""A carried stream state field (`stream: StreamState = None`): None, and left out of the JSON,
on a fresh start."""
