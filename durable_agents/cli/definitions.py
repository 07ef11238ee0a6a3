"""`agent diff RUN_A RUN_B`: what differs between the agent definitions two runs (or sessions)
go by: a unified diff of the system prompts, the tools added, removed or changed (their JSON
schemas), the model and fallbacks, the approval policy and the other settings
(docs/concepts/definitions.md).

Each run's definition is read from its history, through `AgentClient` (`RunHandle.
history_events`: the latest run of its continue-as-new chain): the definition its input carries
from the run before (`definition`; a session's `carry.definition`), then the results of its
`record_definition` activities (`contracts.definition.DefinitionRecord`; the definition is in
the result whichever way the run recorded it). A run goes by the last of them: the one it started
with, or the one a session migrated to at a turn boundary. With
`--json`, the diff as JSON (`loop.definition_diff.DefinitionDiff`, with the runs' ids).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from durable_agents.cli.commands import Context
from durable_agents.cli.errors import OK, CliError
from durable_agents.client import RunHandle
from durable_agents.contracts.definition import (
    RECORD_DEFINITION_ACTIVITY,
    AgentDefinition,
    DefinitionRecord,
)
from durable_agents.loop.definition_diff import definition_diff, diff_lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", metavar="RUN_A", help="a run's (or a session's) workflow id")
    parser.add_argument("run_b", metavar="RUN_B", help="the run to compare it with")


def record_inputs(events: Sequence[HistoryEvent]) -> dict[int, Payload | None]:
    """The input of each `record_definition` activity of a history, by its scheduled event's
    id (a `DefinitionRequest`, or the record itself: `workflows.definitions`)."""
    scheduled = [
        (event.event_id, event.activity_task_scheduled_event_attributes)
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    return {
        event_id: next(iter(attributes.input.payloads), None)
        for event_id, attributes in scheduled
        if attributes.activity_type.name == RECORD_DEFINITION_ACTIVITY
    }


def record_payloads(events: Sequence[HistoryEvent]) -> list[Payload]:
    """The result of each `record_definition` activity of a history, in order."""
    scheduled = record_inputs(events)
    completed = [
        event.activity_task_completed_event_attributes
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
    ]
    return [
        done.result.payloads[0]
        for done in completed
        if done.scheduled_event_id in scheduled and done.result.payloads
    ]


def carried_definition(start: Any) -> AgentDefinition | None:
    """The definition a run's input carries from the run it continues (an `AgentWorkflow`'s
    `definition`, a session's `carry.definition`), if any."""
    if not isinstance(start, dict):
        return None
    carry = start.get("carry")
    found = start.get("definition") or (
        carry.get("definition") if isinstance(carry, dict) else None
    )
    return AgentDefinition.model_validate(found) if isinstance(found, dict) else None


async def definitions_of(run: RunHandle) -> list[AgentDefinition]:
    """Every definition a run went by, oldest first: the one its input carries, then each it
    recorded (decoded with its client's data converter: a codec's key, a payload store)."""
    events = await run.history_events()
    converter = run.client.data_converter
    started = events[0].workflow_execution_started_event_attributes.input.payloads if events else []
    carried = (
        carried_definition((await converter.decode(started[:1], [Any]))[0]) if started else None
    )
    payloads = record_payloads(events)
    decoded = await converter.decode(payloads, [DefinitionRecord] * len(payloads))
    recorded = [r.definition for r in decoded if isinstance(r, DefinitionRecord) and r.definition]
    return [*([carried] if carried is not None else []), *recorded]


async def run_definition(run: RunHandle) -> AgentDefinition:
    """The definition a run goes by: the last of `definitions_of` (`CliError` when it has
    none)."""
    taken = await definitions_of(run)
    if not taken:
        raise CliError(
            f"{run.id}: no definition recorded (a run started before runs recorded theirs, or "
            "one that has not started yet)"
        )
    return taken[-1]


async def diff(args: argparse.Namespace, ctx: Context) -> int:
    """Print what differs from RUN_A's definition to RUN_B's."""
    agents = await ctx.agents()
    before = await run_definition(agents.run(args.run_a))
    after = await run_definition(agents.run(args.run_b))
    found = definition_diff(before, after, (args.run_a, args.run_b))
    if ctx.json:
        ctx.emit({"run_a": args.run_a, "run_b": args.run_b, **found.model_dump(mode="json")})
    else:
        ctx.say(*diff_lines(found))
    return OK
