"""The definition a run goes by (`contracts.definition`, docs/concepts/definitions.md): recorded
in its history as it starts, kept across deploys while it waits, and at each turn boundary of a
session either kept or migrated to the worker's, as the worker's definition says.

What a run records is a `DefinitionRecord`, the result of the `record_definition` activity:
replay reads it back, so a run replayed (or resumed after a deploy) on a worker whose
tools or agents changed still goes by what it recorded, and decides again the way it decided.
Whether a run records at all is asked once through `workflow.patched(DEFINITION_MARKER)`: runs
recorded before definitions existed replay without the activity (no marker), new runs
(and a session recorded before, at its next turn) record.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_input import AgentInput, AgentSettings
    from durable_agents.contracts.agent_result import AgentResult
    from durable_agents.contracts.definition import (
        RECORD_DEFINITION_ACTIVITY,
        AgentDefinition,
        DefinitionRecord,
    )
    from durable_agents.contracts.model_io import ToolSchema
    from durable_agents.loop.definition import (
        definition_of,
        end_record,
        pinned_tools,
        settings_of,
        started_record,
        turn_record,
        worker_settings,
    )
    from durable_agents.workflows.worker_catalog import worker_catalog

DEFINITION_MARKER = "agent-definition"
"""The patch marker of a run that records its definition."""


async def record(proposed: DefinitionRecord) -> DefinitionRecord:
    """`proposed`, recorded in the history; on replay, what was recorded.

    An activity, not a local activity: a local activity's result is resolved on replay in the
    workflow task it was recorded in, which can be earlier than the one the run first read it
    in, so a `workflow.patched` asked after it (the search attributes' first upsert) would not
    see its marker on replay (`TMPRL1100 Non-deprecated patch marker encountered`)."""
    return await workflow.execute_activity(
        RECORD_DEFINITION_ACTIVITY,
        proposed,
        result_type=DefinitionRecord,
        start_to_close_timeout=timedelta(seconds=10),
        schedule_to_close_timeout=timedelta(minutes=5),
        retry_policy=RetryPolicy(maximum_attempts=3),
        summary=f"definition {proposed.outcome}: {proposed.label}",
    )


def worker_tools(settings: AgentSettings) -> list[ToolSchema]:
    """The schemas of the worker's tools that `settings` allow."""
    return [tool.schema() for tool in worker_catalog().tools.select(settings.tools)]


def worker_definition(settings: AgentSettings) -> AgentDefinition:
    """The worker's current definition for a run of `settings`: its agent's settings as the
    worker defines that agent now (when it does), with the worker's tools."""
    profile = worker_catalog().agents.get(settings.agent_name) if settings.agent_name else None
    current = worker_settings(settings, profile.definition if profile is not None else None)
    return definition_of(current, worker_tools(current))


async def run_definition(params: AgentInput) -> AgentInput:
    """`params` with the definition the run goes by: the one it carries (continued, or a
    session's turn), else the one it starts with, recorded now. A run recorded before
    definitions existed goes on without one."""
    if params.definition is not None or not workflow.patched(DEFINITION_MARKER):
        return params
    started = await record(started_record(definition_of(params, worker_tools(params))))
    return params.model_copy(update={"definition": started.definition})


async def definition_at_turn(
    settings: AgentSettings, running: AgentDefinition | None, turn: int
) -> tuple[AgentSettings, AgentDefinition | None]:
    """At the boundary before a session's `turn`: the settings and the definition it goes by
    from now on, after comparing the one it runs (`running`; None: its first turn recorded)
    with the worker's, and recording what it found and did."""
    if not workflow.patched(DEFINITION_MARKER):
        return settings, running
    if running is None:
        proposed = started_record(definition_of(settings, worker_tools(settings)))
    else:
        proposed = turn_record(running, worker_definition(settings), turn)
    recorded = await record(proposed)
    if recorded.outcome == "migrated" and recorded.definition is not None:
        workflow.logger.info(
            "turn %d: migrating from definition %s to %s", turn, recorded.previous, recorded.label
        )
        return settings_of(settings, recorded.definition), recorded.definition
    if recorded.outcome == "kept":
        workflow.logger.info("turn %d: keeping the definition; the worker has %s", turn,
                             recorded.label)  # fmt: skip
    return settings, recorded.definition or running


async def definition_at_end(params: AgentInput, result: AgentResult) -> None:
    """A one-shot run that waited for a person (the wait a deploy comes and goes in) records, as
    it ends, the worker's definition then, and that it kept its own (`end_record`). A session's
    turn does not: its session records at the next turn boundary."""
    waited = any(step.human is not None for step in result.steps)
    if params.definition is None or params.session is not None or not waited:
        return
    await record(end_record(params.definition, worker_definition(params)))


def shown_tools(offered: list[ToolSchema], params: AgentInput) -> list[ToolSchema]:
    """What the model is told about the run's tools: as its definition recorded them."""
    if params.definition is None:
        return offered
    return pinned_tools(offered, params.definition, worker_catalog().tools.names())


def definition_memo(definition: AgentDefinition | None) -> dict[str, object]:
    """The memo entries of a run's definition (none without one)."""
    if definition is None:
        return {}
    return {"definition": definition.label, "definition_digest": definition.digest}


def definition_shown(definition: AgentDefinition | None) -> tuple[str, str] | None:
    """(label, digest) of a definition, for the search attributes (None without one)."""
    return (definition.label, definition.digest) if definition is not None else None
