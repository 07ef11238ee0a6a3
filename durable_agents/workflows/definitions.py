"""The definition a run goes by (`contracts.definition`, docs/concepts/definitions.md): recorded
in its history as it starts, kept across deploys while it waits, and at each turn boundary of a
session either kept or migrated to the worker's, as the worker's definition says.

What a run records is a `DefinitionRecord`, the result of the `record_definition` activity:
replay reads it back, so a run replayed (or resumed after a deploy) on a worker whose
tools or agents changed still goes by what it recorded, and decides again the way it decided.

How a run records is asked through two patches (`recording`), the newer first:

- `agent-definition-once` (every new run): as it starts, the run sends its settings that differ
  from the defaults and the activity makes the definition (`DefinitionRequest`), so the history
  holds it once, in the result; a one-shot run records nothing as it ends (it has no turn
  boundary: it keeps its definition to the end by construction).
- `agent-definition` (runs recorded before it): as it starts, the run made the record and the
  activity echoed it (the definition twice); a one-shot run that waited for a person recorded,
  as it ended, the worker's definition then (`end_record`: one more workflow task and activity).
- neither: runs recorded before definitions existed replay without the activity; a session
  recorded before records its definition at its next turn.

At a session's turn boundary both record the same: the workflow makes the record (digests only
unless it migrates) and the activity echoes it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_input import AgentInput, AgentSettings
    from durable_agents.contracts.agent_result import AgentResult
    from durable_agents.contracts.definition import (
        RECORD_DEFINITION_ACTIVITY,
        AgentDefinition,
        DefinitionRecord,
        DefinitionRequest,
    )
    from durable_agents.contracts.model_io import ToolSchema
    from durable_agents.loop.definition import (
        definition_on,
        end_record,
        pinned_tools,
        settings_of,
        sparse_settings,
        started_record,
        turn_record,
        worker_settings,
    )
    from durable_agents.workflows.worker_catalog import worker_catalog

DEFINITION_MARKER = "agent-definition"
"""The patch marker of a run that recorded its definition echoed (`agent-definition-once` now)."""
DEFINITION_ONCE_MARKER = "agent-definition-once"
"""The patch marker of a run that records its definition once (`DefinitionRequest`)."""

Recording = Literal["once", "echoed"]
"""How a run records its definition: under `agent-definition-once`, or `agent-definition`."""


def recording() -> Recording | None:
    """How this run records its definition (None: it does not, recorded before definitions).
    The SDK keeps each answer for the run, so every call gives the first one."""
    if workflow.patched(DEFINITION_ONCE_MARKER):
        return "once"
    return "echoed" if workflow.patched(DEFINITION_MARKER) else None


async def record(
    proposed: DefinitionRecord | DefinitionRequest, label: str | None = None
) -> DefinitionRecord:
    """`proposed` recorded in the history (a request: the definition the activity makes from
    it, `label` as this worker sees it, for the summary); on replay, what was recorded.

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
        summary=f"definition {proposed.outcome}: {proposed.label}"
        if isinstance(proposed, DefinitionRecord)
        else f"definition started: {label}",
    )


async def record_start(settings: AgentSettings, how: Recording) -> DefinitionRecord:
    """The `started` record of a run (or a session's first turn) with `settings`: made by the
    activity from the settings that differ from the defaults (`once`), or made here and echoed."""
    made = definition_on(settings, worker_catalog().tools)
    if how == "once":
        return await record(DefinitionRequest(settings=sparse_settings(settings)), made.label)
    return await record(started_record(made))


def worker_definition(settings: AgentSettings) -> AgentDefinition:
    """The worker's current definition for a run of `settings`: its agent's settings as the
    worker defines that agent now (when it does), with the worker's tools."""
    profile = worker_catalog().agents.get(settings.agent_name) if settings.agent_name else None
    current = worker_settings(settings, profile.definition if profile is not None else None)
    return definition_on(current, worker_catalog().tools)


async def run_definition(params: AgentInput) -> AgentInput:
    """`params` with the definition the run goes by: the one it carries (continued, or a
    session's turn), else the one it starts with, recorded now. A run recorded before
    definitions existed goes on without one."""
    if params.definition is not None or (how := recording()) is None:
        return params
    started = await record_start(params, how)
    return params.model_copy(update={"definition": started.definition})


async def definition_at_turn(
    settings: AgentSettings, running: AgentDefinition | None, turn: int
) -> tuple[AgentSettings, AgentDefinition | None]:
    """At the boundary before a session's `turn`: the settings and the definition it goes by
    from now on, after comparing the one it runs (`running`; None: its first turn recorded)
    with the worker's, and recording what it found and did."""
    if (how := recording()) is None:
        return settings, running
    if running is None:
        recorded = await record_start(settings, how)
    else:
        recorded = await record(turn_record(running, worker_definition(settings), turn))
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
    """A one-shot run recorded under `agent-definition` alone that waited for a person (the
    wait a deploy comes and goes in) records, as it ends, the worker's definition then, and
    that it kept its own (`end_record`). A run recorded once does not: it keeps its definition
    to the end, as it started with it; a session's turn neither: its session records at the
    next turn boundary."""
    waited = any(step.human is not None for step in result.steps)
    if params.definition is None or params.session is not None or not waited:
        return
    if workflow.patched(DEFINITION_MARKER):  # (a new run: no, `runtime.workers`, no marker)
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
