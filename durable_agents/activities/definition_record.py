"""`record_definition`: the activity that records what a run found out about its agent's
definition (`contracts.definition.DefinitionRecord`) in its history.

Its result is what counts: an activity's result is in history, and replay reads it from there, so
a run replayed on a worker whose tools or agent definitions changed since goes by what its first
execution saw (the SDK has no side effect of its own for this; `workflows.definitions.record`
says why not a local activity).

- As a run starts (patch `agent-definition-once`), the workflow sends its settings that differ
  from the defaults (`DefinitionRequest`) and the activity makes the definition from them and
  its worker's tools (`loop.definition.definition_on`): the history holds the definition once,
  in the result.
- At a session's turn boundary, and as a run starts under `agent-definition` alone (recorded
  before), the workflow makes the record itself and the activity gives it back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity

from durable_agents.contracts.agent_input import AgentSettings
from durable_agents.contracts.definition import (
    RECORD_DEFINITION_ACTIVITY,
    DefinitionRecord,
    DefinitionRequest,
)
from durable_agents.loop.definition import definition_on, started_record
from durable_agents.tools.registry import ToolRegistry


def definition_recorder(tools: ToolRegistry) -> Callable[..., Any]:
    """The `record_definition` activity of a worker whose tools are `tools`."""

    @activity.defn(name=RECORD_DEFINITION_ACTIVITY)
    async def record_definition(record: DefinitionRequest | DefinitionRecord) -> DefinitionRecord:
        """A request: the definition its settings give with this worker's tools, `started`; a
        record: as given. The history keeps the result."""
        if isinstance(record, DefinitionRecord):
            return record
        return started_record(definition_on(AgentSettings.model_validate(record.settings), tools))

    return record_definition
