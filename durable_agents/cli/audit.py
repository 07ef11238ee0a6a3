"""`agent audit --since 24h [--tenant T] [--json]`: every decision people made, from the runs'
histories: who decided (and whether a server authenticated them or the sender named
themselves), when, on which call of which tool, the digest of the arguments shown, the outcome.

The runs come from a visibility query (agent runs and sessions still running or closed since
`--since`; with `--tenant`, only that tenant's: the `AgentTenant` search attribute). In each
history, the decisions are read where history keeps them:

- each `decide` and `tool_result` update's recorded answer (a `HumanDecision`), as it was
  taken, whether the run has ended or not;
- a finished run's result: every step that waited for a person carries its decision, the ones
  sent as signals (the Temporal CLI, `approve` / `reject` / `reply`) and timeouts included.

One decision is listed once (by run, call and time). A decision sent as a signal to a run still
running shows once the run has ended. As a table, or as JSON lines with `--json`.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowExecution
from temporalio.converter import DataConverter
from temporalio.service import RPCError

from durable_agents.cli.commands import Context
from durable_agents.cli.errors import OK, CliError
from durable_agents.client import AgentClient
from durable_agents.client.connection import run_tenant
from durable_agents.client.workflow_calls import SESSION_TYPE, WORKFLOW_TYPE
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import HumanDecision
from durable_agents.contracts.principals import TENANT_PATTERN
from durable_agents.errors import AgentError
from durable_agents.loop.approvals import args_digest
from durable_agents.workflows.search_attributes import AGENT_TENANT

RELATIVE = re.compile(r"^(\d+)([smhd])$")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
ANSWER_UPDATES = frozenset({"decide", "tool_result"})
"""The updates whose result is a `HumanDecision`."""
DIGEST_SHOWN = 12
"""Hex digits of the arguments' digest the table shows (JSON has all 64)."""


def since_option(text: str, now: datetime | None = None) -> datetime:
    """`24h`, `30m`, `7d`, `90s` (ago), or an ISO 8601 instant (UTC when no zone is given)."""
    now = now or datetime.now(UTC)
    relative = RELATIVE.fullmatch(text.strip())
    if relative:
        amount, unit = relative.groups()
        return now - timedelta(**{UNITS[unit]: int(amount)})
    try:
        instant = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a time ago (24h, 30m, 7d) or an ISO 8601 instant"
        ) from None
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)


def tenant_option(text: str) -> str:
    if not re.fullmatch(TENANT_PATTERN, text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a tenant name")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--since",
        type=since_option,
        required=True,
        metavar="WHEN",
        help="decisions made since then: 24h, 30m, 7d ago, or an ISO 8601 instant",
    )
    parser.add_argument(
        "--tenant", type=tenant_option, help="only this tenant's runs (AgentTenant)"
    )


@dataclass(frozen=True)
class AuditRecord:
    """One decision, as `agent audit` lists it."""

    at: str
    workflow_id: str
    run_id: str
    tenant: str
    call_id: str
    tool: str | None
    outcome: str
    by: str | None
    self_declared: bool | None
    """False: the authenticated principal a server recorded; True: the name the sender gave;
    None: nobody (a timeout)."""
    by_tenant: str | None
    args_digest: str
    """sha256 of the arguments the model asked for (what the person was shown)."""
    digest_named: str | None
    """The digest the decision named (None: it named none, as a plain signal)."""
    executed_args_digest: str | None

    def row(self) -> list[str]:
        who = self.by or "-"
        if self.self_declared:
            who += " (self-declared)"
        return [
            self.at[:19].replace("T", " "),
            self.tenant,
            self.workflow_id,
            self.call_id,
            self.tool or "-",
            self.outcome,
            who,
            self.args_digest[:DIGEST_SHOWN],
        ]


HEADER = ["WHEN (UTC)", "TENANT", "RUN", "CALL", "TOOL", "OUTCOME", "BY", "ARGS DIGEST"]


def audit_record(
    execution: WorkflowExecution, tenant: str, decision: HumanDecision, tool: str | None
) -> AuditRecord:
    maker = decision.maker
    executed = decision.executed_args
    return AuditRecord(
        at=decision.at.astimezone(UTC).isoformat(),
        workflow_id=execution.id,
        run_id=execution.run_id,
        tenant=tenant,
        call_id=decision.call_id,
        tool=tool,
        outcome=decision.outcome,
        by=decision.by,
        self_declared=maker.self_declared if maker is not None else None,
        by_tenant=maker.tenant if maker is not None else None,
        args_digest=args_digest(decision.model_args),
        digest_named=decision.args_digest,
        executed_args_digest=args_digest(executed) if executed is not None else None,
    )


def visibility_query(since: datetime, tenant: str | None) -> str:
    """Agent runs and sessions still running or closed since `since` (in `tenant`)."""
    stamp = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    query = (
        f'(WorkflowType="{WORKFLOW_TYPE}" OR WorkflowType="{SESSION_TYPE}") '
        f'AND (ExecutionStatus="Running" OR CloseTime >= "{stamp}")'
    )
    return f'{query} AND {AGENT_TENANT.name}="{tenant}"' if tenant else query


async def decisions_in(
    events: Iterable[HistoryEvent], converter: DataConverter
) -> AsyncIterator[tuple[HumanDecision, str | None]]:
    """Each decision the history records, with its tool when the history names it: the
    answers of `decide` / `tool_result` updates, then the steps of a finished run's result."""
    updates: dict[int, str] = {}
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            updates[event.event_id] = request.input.name
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            attributes = event.workflow_execution_update_completed_event_attributes
            name = updates.get(attributes.accepted_event_id)
            if name in ANSWER_UPDATES and attributes.outcome.HasField("success"):
                payloads = list(attributes.outcome.success.payloads)
                [decision] = await converter.decode(payloads, [HumanDecision])
                yield decision, None
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            payloads = list(event.workflow_execution_completed_event_attributes.result.payloads)
            try:
                [result] = await converter.decode(payloads, [AgentResult])
            except Exception:  # a session's result: its turns' decisions are in their runs
                continue
            for step in result.steps:
                if step.human is not None:
                    yield step.human, step.tool


async def audit_records(
    agents: AgentClient, since: datetime, tenant: str | None
) -> list[AuditRecord]:
    """Every decision since `since` (in `tenant`), oldest first (see the module docstring)."""
    records: dict[tuple[str, str, str, str], AuditRecord] = {}
    converter = agents.client.data_converter
    async for execution, history in agents.histories(visibility_query(since, tenant)):
        tenant_of_run = await run_tenant(execution)
        async for decision, tool in decisions_in(history.events, converter):
            if decision.at < since:
                continue
            record = audit_record(execution, tenant_of_run, decision, tool)
            key = (record.workflow_id, record.call_id, record.at, record.outcome)
            if tool is not None or key not in records:
                records[key] = record
    return sorted(records.values(), key=lambda r: (r.at, r.workflow_id, r.call_id))


def table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows]  # fmt: skip


async def audit(args: argparse.Namespace, ctx: Context) -> int:
    """`agent audit --since WHEN [--tenant T] [--json]` (see the module docstring)."""
    try:
        records = await audit_records(await ctx.agents(), args.since, args.tenant)
    except (RPCError, AgentError) as error:
        if args.tenant and AGENT_TENANT.name in str(error):
            raise CliError(
                f"the namespace cannot filter by {AGENT_TENANT.name} ({error}); a worker "
                "registers it at start (durable_agents/runtime/search_attributes.py)"
            ) from None
        raise
    if ctx.json:
        for record in records:
            ctx.out.write(json.dumps(asdict(record), ensure_ascii=False) + "\n")
        ctx.out.flush()
        return OK
    if not records:
        ctx.say(f"no decisions since {args.since.isoformat()}")
        return OK
    ctx.say(*table([HEADER, *(record.row() for record in records)]))
    return OK
