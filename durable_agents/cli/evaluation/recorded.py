"""Eval cases rebuilt from recorded runs (`agent eval --from-runs`): a finished run's history
becomes a `Scenario` that replays it against another definition.

From each history (an `AgentWorkflow` run, or a `SessionWorkflow` and its turns):

- the user's inputs: the prompt (a session's first message) and a session's later messages
  (`turns`); the run's settings (its input, less what Temporal or the workflow set: links,
  resume state, tenant, starter, and the model, which the evaluation chooses);
- the people: each recorded decision, in order, as a scripted person who answers once
  (approve, with the edit the reviewer made; reject, with the reason; reply, with the text);
- the tool outputs: every call that ran (status ok or error), its arguments and what the
  model read, as `tool_fixtures`: the rerun answers its calls from them and runs no tool;
- the baseline: each turn's answer, the steps, model calls, tokens and cost, to compare with.

Runs that are not whole conversations of their own are skipped with the reason: a session's
turn or a sub-agent (part of another run), a run that continued as new, a run `agent eval`
itself made; and plan-and-execute runs, whose tool calls are in their steps' child runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowExecution, WorkflowHistory
from temporalio.converter import DataConverter

from durable_agents.cli.evaluation.suite import (
    ApprovePerson,
    Person,
    RecordedBaseline,
    RejectPerson,
    ReplyPerson,
    Scenario,
)
from durable_agents.client.workflow_calls import SESSION_TYPE, WORKFLOW_TYPE
from durable_agents.contracts.agent_input import AgentSettings
from durable_agents.contracts.agent_result import AgentResult, ToolStep
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.contracts.session import TurnResult
from durable_agents.contracts.tool_fixtures import ToolFixture
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.approvals import edited_note

NOT_REPLAYED = ("model", "tenant", "starter", "tool_fixtures")
"""Settings of a recorded run a case leaves out: the model is the evaluation's choice (its
`--model`, else the recorded run's), tenant and starter are stamped by whoever starts it."""
RUN_ONLY = ("prompt", "resume", "resume_context", "stream", "session", "depth", "parent")
"""Input fields of a run that are not settings (its prompt goes to the scenario's)."""
SESSION_ONLY = ("agent", "carry", "stream", "tenant", "starter")
"""`SessionInput` fields a session case does not replay (the agent settings are its input)."""
SEND_UPDATE = "send"
ANYONE_ELSE = ApprovePerson(
    action="approve", comment="no decision recorded: nothing runs, it is a new tool call"
)
"""The last person of a rebuilt case: approves any call the recording has no decision for
(nothing runs in a rerun: such a call is answered as a new tool call, and reported)."""
EVAL_RUN = re.compile(r"^eval-\d{8}T\d{6}Z-[0-9a-f]{6}/")
"""The workflow ids `agent eval` gives its runs and sessions."""
IDS = re.compile(r"^[A-Za-z0-9_.:/@-]+(\s*,\s*[A-Za-z0-9_.:/@-]+)*$")


def runs_query(text: str) -> str:
    """The visibility query `--from-runs` means: a query as it is, or a comma-separated list of
    workflow ids; either way only finished agent runs and sessions."""
    text = text.strip()
    if IDS.fullmatch(text):
        ids = [i.strip() for i in text.split(",")]
        query = " OR ".join(f'WorkflowId = "{i}"' for i in ids)
    else:
        query = text
    kinds = f'(WorkflowType = "{WORKFLOW_TYPE}" OR WorkflowType = "{SESSION_TYPE}")'
    return f'({query}) AND {kinds} AND ExecutionStatus = "Completed"'


@dataclass(frozen=True)
class Skipped:
    """A listed run that gives no case, and why."""

    workflow_id: str
    reason: str


def case_name(workflow_id: str, taken: set[str]) -> str:
    """A scenario name from a workflow id (letters, digits, `_`, `.`, `-`), unique."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", workflow_id).strip("_.-")[:70] or "run"
    base = base if base[0].isalnum() else f"run{base}"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


# -- from the steps -----------------------------------------------------------------------------


def _observation(step: ToolStep) -> str:
    """What the tool gave, without the note about a reviewer's edit the round put before it."""
    note = edited_note(step.human) if step.human is not None else None
    if note and step.observation.startswith(note + "\n"):
        return step.observation[len(note) + 1 :]
    return step.observation


def fixtures_of(steps: Sequence[ToolStep]) -> list[ToolFixture]:
    """Every call that ran (a question's reply is the person's, not a tool output)."""
    return [
        ToolFixture(tool=s.tool, args=s.args or {}, observation=_observation(s), status=s.status)
        for s in steps
        if s.status in ("ok", "error")
        and s.args is not None
        and not (s.human is not None and s.human.kind is RequestKind.QUESTION)
    ]


def people_of(steps: Sequence[ToolStep]) -> list[Person]:
    """Each recorded decision as a person who answers once, in the order they were made; a
    timeout is left to the run's own approval timeout."""
    people: list[Person] = []
    for step in sorted((s for s in steps if s.human is not None), key=lambda s: s.human.at):  # type: ignore[union-attr]
        human = step.human
        assert human is not None
        if human.kind is RequestKind.QUESTION and human.reply is not None:
            people.append(ReplyPerson(action="reply", tool=step.tool, text=human.reply, times=1))
        elif human.kind is RequestKind.APPROVAL and human.outcome == "rejected":
            reason = human.reason or "rejected"
            people.append(RejectPerson(action="reject", tool=step.tool, reason=reason, times=1))
        elif human.kind is RequestKind.APPROVAL and human.outcome in ("approved", "edited"):
            edit = human.executed_args if human.outcome == "edited" else None
            people.append(
                ApprovePerson(
                    action="approve", tool=step.tool, args=edit, comment=human.comment, times=1
                )
            )
    return people


# -- from the history ---------------------------------------------------------------------------


async def _decoded(converter: DataConverter, payloads: Payloads, kind: type[Any]) -> Any:
    [value] = await converter.decode(list(payloads.payloads), [kind])
    return value


def _first(events: Sequence[HistoryEvent], kind: EventType.ValueType) -> HistoryEvent | None:
    return next((e for e in events if e.event_type == kind), None)


def settings_of(raw: dict[str, Any], drop: Sequence[str]) -> dict[str, Any]:
    """The recorded settings a case replays (checked as `AgentSettings`, so a recording made
    before a setting was renamed says so instead of failing later)."""
    settings = {k: v for k, v in raw.items() if k not in (*drop, *NOT_REPLAYED)}
    AgentSettings.model_validate(settings)
    return settings


async def rebuild(
    execution: WorkflowExecution,
    history: WorkflowHistory,
    converter: DataConverter,
    taken: set[str],
) -> Scenario | Skipped:
    """The case of one finished run or session, or why it gives none."""
    events = list(history.events)
    started = _first(events, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
    done = _first(events, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)
    if started is None or done is None:
        return Skipped(execution.id, "it has not completed")
    raw = await _decoded(converter, started.workflow_execution_started_event_attributes.input, dict)
    if EVAL_RUN.match(execution.id):
        return Skipped(execution.id, "a run agent eval made")
    if execution.workflow_type == SESSION_TYPE:
        return await _session_case(execution, events, raw, converter, taken)
    for field, what in (("session", "a turn of a session"), ("parent", "a sub-agent's run")):
        if raw.get(field):
            return Skipped(execution.id, f"{what} (evaluate the run it is part of)")
    if raw.get("resume"):
        return Skipped(execution.id, "it continued from an earlier run (continue-as-new)")
    if raw.get("mode") == "plan_and_execute":
        return Skipped(execution.id, "plan-and-execute: its steps' tool calls are child runs")
    attrs = done.workflow_execution_completed_event_attributes
    result: AgentResult = await _decoded(converter, attrs.result, AgentResult)
    steps = result.steps
    baseline = RecordedBaseline(
        workflow_id=execution.id,
        run_id=execution.run_id,
        answers=[result.answer],
        stop_reason=result.stop_reason,
        model=raw.get("model"),
        answered_by=result.model,
        steps=len(steps) + result.steps_omitted,
        turns=result.iterations,
        tools=[s.tool for s in steps],
        usage=result.usage,
        cost_usd=result.cost_usd,
    )
    omitted = (
        f"; its {result.steps_omitted} earliest steps were left out of its result, so their "
        "calls have no recorded output"
        if result.steps_omitted
        else ""
    )
    return Scenario(
        name=case_name(execution.id, taken),
        prompt=raw["prompt"],
        description=f"rebuilt from run {execution.id}{omitted}",
        tags=["from-runs"],
        input={**settings_of(raw, RUN_ONLY), "tool_fixtures": _dumped(fixtures_of(steps))},
        people=[*people_of(steps), ANYONE_ELSE],
        recorded=baseline,
    )


def _dumped(fixtures: list[ToolFixture]) -> list[dict[str, Any]]:
    return [f.model_dump(mode="json") for f in fixtures]


async def _session_case(
    execution: WorkflowExecution,
    events: Sequence[HistoryEvent],
    raw: dict[str, Any],
    converter: DataConverter,
    taken: set[str],
) -> Scenario | Skipped:
    """A session's case: its messages in the order it took them, each turn's answer."""
    if raw.get("carry"):
        return Skipped(execution.id, "a session that continued from an earlier run")
    messages: dict[str, str] = {}
    results: dict[str, TurnResult] = {}
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if request.input.name == SEND_UPDATE:
                sent = await _decoded(converter, request.input.args, dict)
                messages[request.meta.update_id] = str(sent["text"])
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            attrs = event.workflow_execution_update_completed_event_attributes
            if attrs.meta.update_id in messages and attrs.outcome.HasField("success"):
                turn = await _decoded(converter, attrs.outcome.success, TurnResult)
                results[attrs.meta.update_id] = turn
    answered = [(messages[i], results[i]) for i in messages if i in results]
    if not answered:
        return Skipped(execution.id, "a session with no answered message")
    steps = [s for _, turn in answered for s in turn.steps]
    agent = dict(raw.get("agent") or {})
    baseline = RecordedBaseline(
        workflow_id=execution.id,
        run_id=execution.run_id,
        answers=[turn.answer for _, turn in answered],
        stop_reason=answered[-1][1].stop_reason,
        model=agent.get("model"),
        steps=len(steps),
        turns=0,
        tools=[s.tool for s in steps],
        usage=sum((turn.usage for _, turn in answered), TokenUsage()),
    )
    return Scenario(
        name=case_name(execution.id, taken),
        prompt=answered[0][0],
        turns=[text for text, _ in answered[1:]],
        description=f"rebuilt from session {execution.id}",
        tags=["from-runs", "session"],
        input={**settings_of(agent, ()), "tool_fixtures": _dumped(fixtures_of(steps))},
        session={k: v for k, v in raw.items() if k not in SESSION_ONLY},
        people=[*people_of(steps), ANYONE_ELSE],
        recorded=baseline,
    )
