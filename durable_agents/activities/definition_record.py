"""`record_definition`: the activity that records what a run found out about its agent's
definition (`contracts.definition.DefinitionRecord`) in its history.

The workflow computes the record itself (`loop.definition`: the definition from its settings
and the worker's tools); this activity only gives it back. Its result is what counts: an activity's
result is in history, and replay reads it from there, so a run replayed on a worker whose tools
or agent definitions changed since goes by what its first execution saw (the SDK has no side
effect of its own for this; `workflows.definitions.record` says why not a local activity)."""

from __future__ import annotations

from temporalio import activity

from durable_agents.contracts.definition import RECORD_DEFINITION_ACTIVITY, DefinitionRecord


@activity.defn(name=RECORD_DEFINITION_ACTIVITY)
async def record_definition(record: DefinitionRecord) -> DefinitionRecord:
    """The record, as given: the history keeps it."""
    return record
