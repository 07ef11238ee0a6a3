"""`agent replay`: replay histories of real runs against this code, as CI does before a deploy.

Each history is replayed on a plain `temporalio.worker.Replayer` of the public workflow classes
(`AgentWorkflow`, `SessionWorkflow`) with the project's data converter (the pydantic JSON,
decrypted with `AGENT_PAYLOAD_KEY` when it is set, large payloads read from
`AGENT_PAYLOAD_STORE`): no catalog, no flags, since replay follows the history, never the
worker's configuration (README, "Changing workflow code"). The tools are the application's, with
the modules `AGENT_TOOL_MODULES` names loaded as the worker loads them: a run's tools are code,
and a replayer needs the code the run called.

    temporal workflow show --workflow-id ID --output json > histories/ID.json
    agent replay histories/*.json
    agent replay --workflow-id ID
    agent replay --query 'WorkflowType="AgentWorkflow" AND ExecutionStatus="Completed"' --limit 50

Exit code 0 when every history replays, 1 when one does not (each failure is named), 4 when a
history cannot be read or downloaded.
"""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter
from temporalio.runtime import Runtime, TelemetryConfig
from temporalio.worker import Replayer

from durable_agents.cli.commands import Context
from durable_agents.cli.errors import CLI_ERROR, OK, RUN_FAILED, CliError
from durable_agents.client import AgentClient
from durable_agents.client.connection import open_store
from durable_agents.runtime.codec import data_converter
from durable_agents.runtime.settings import EnvironmentSettings
from durable_agents.tools.catalog import CATALOG
from durable_agents.workflows.agent_workflow import AgentWorkflow
from durable_agents.workflows.session_workflow import SessionWorkflow
from durable_agents.workflows.worker_catalog import names_missing_from

DEFAULT_LIMIT = 100


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="a history as `temporal workflow show --output json` writes it",
    )
    parser.add_argument(
        "--workflow-id",
        action="append",
        default=[],
        metavar="ID",
        help="download every run of this workflow from the server (repeat for more)",
    )
    parser.add_argument(
        "--query",
        metavar="QUERY",
        help="download the runs this visibility query lists (as `temporal workflow list`)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"most runs --query downloads (default {DEFAULT_LIMIT})",
    )


@dataclass(frozen=True)
class Replayed:
    """One history's replay: None as `failure` when it replayed."""

    workflow_id: str
    run_id: str
    events: int
    failure: str | None

    def line(self) -> str:
        where = f"{self.workflow_id} {self.run_id} ({self.events} events)"
        return f"ok      {where}" if self.failure is None else f"FAILED  {where}: {self.failure}"


CORE_MESSAGE = re.compile(r'message: "(.*?)", source:')
"""The message inside the SDK core's failure text (`Failure { failure: Some(Failure { ...`)."""


def plain_replayer(converter: DataConverter) -> Replayer:
    """The workflow classes and the data converter, nothing else (a runtime of its own that
    does not log: each failure is printed once, on its history's line)."""
    return Replayer(
        workflows=[AgentWorkflow, SessionWorkflow],
        data_converter=converter,
        runtime=Runtime(telemetry=TelemetryConfig(logging=None)),
    )


def failure_text(failure: BaseException) -> str:
    """What diverged, in one line (the core's message when it wraps one)."""
    text = str(failure)
    found = CORE_MESSAGE.search(text)
    return (found.group(1) if found else (text.splitlines() or [""])[0])[:500]


def load_tool_modules(settings: EnvironmentSettings) -> None:
    """Import the modules `AGENT_TOOL_MODULES` names, as the worker does (they register their
    tools in the application's catalog)."""
    for module in settings.tool_modules:
        importlib.import_module(module)


def read_history(path: Path) -> WorkflowHistory:
    """A history file; its workflow id is the one its start event records (else the name)."""
    try:
        text = path.read_text()
        history = WorkflowHistory.from_json(path.stem, text)
    except (OSError, ValueError) as error:
        raise CliError(f"{path}: not a history in JSON ({error})") from None
    if not history.events:
        raise CliError(f"{path}: the history has no events")
    started = history.events[0].workflow_execution_started_event_attributes
    return WorkflowHistory.from_json(started.workflow_id or path.stem, text)


async def downloaded(
    agents: AgentClient, args: argparse.Namespace
) -> AsyncIterator[WorkflowHistory]:
    """Every run of each `--workflow-id`, then the runs `--query` lists."""
    queries = [(f'WorkflowId="{wid}"', None) for wid in args.workflow_id]
    if args.query:
        queries.append((args.query, args.limit))
    for query, limit in queries:
        found = False
        async for _, history in agents.histories(query, limit=limit):
            found = True
            yield history
        if not found:
            raise CliError(f"no run matches {query}")


async def missing_here(history: WorkflowHistory, converter: DataConverter) -> list[str]:
    """The tools, output type and agent profiles an `AgentWorkflow` run names that this
    replayer's catalog lacks (its tools are code the replayer must have, not configuration)."""
    started = history.events[0].workflow_execution_started_event_attributes
    if started.workflow_type.name != "AgentWorkflow" or not started.input.payloads:
        return []
    try:
        (raw,) = await converter.decode(started.input.payloads[:1])
    except Exception:
        return []
    return names_missing_from(CATALOG, raw)


async def replay_one(
    replayer: Replayer, history: WorkflowHistory, converter: DataConverter
) -> Replayed:
    outcome = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    failure = outcome.replay_failure
    run_id = history.events[0].workflow_execution_started_event_attributes.original_execution_run_id
    text = None if failure is None else failure_text(failure)
    missing = await missing_here(history, converter) if failure is not None else []
    if missing:
        text = (
            f"{text} (the run names {', '.join(missing)}, which this replayer does not have: "
            "load the worker's tool modules with AGENT_TOOL_MODULES)"
        )
    return Replayed(history.workflow_id, run_id, len(history.events), text)


async def replay(args: argparse.Namespace, ctx: Context) -> int:
    """`agent replay FILE... | --workflow-id ID | --query QUERY`."""
    if not (args.files or args.workflow_id or args.query):
        raise CliError("name history files, --workflow-id or --query", CLI_ERROR)
    settings = ctx.target.settings
    load_tool_modules(settings)
    histories = [read_history(Path(p)) for p in args.files]
    if args.workflow_id or args.query:
        agents = await ctx.agents()
        converter = agents.client.data_converter
        histories += [h async for h in downloaded(agents, args)]
    else:
        key, previous = settings.payload_key_bytes, settings.previous_keys
        store = await open_store(ctx.target)
        converter = data_converter(key, settings.payload_key_id, previous, store)
    replayer = plain_replayer(converter)
    results = [await replay_one(replayer, h, converter) for h in histories]
    if ctx.json:
        ctx.emit([r.__dict__ for r in results])
    else:
        ctx.say(*(r.line() for r in results))
        failed = sum(r.failure is not None for r in results)
        ctx.say(f"{len(results) - failed} of {len(results)} histories replay")
    return RUN_FAILED if any(r.failure is not None for r in results) else OK
