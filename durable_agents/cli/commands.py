"""The `agent` subcommands. Each takes the parsed arguments and a `Context` and returns the
exit code; anything the user should read as an error is raised as `CliError`."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from temporalio.client import WorkflowExecutionDescription, WorkflowExecutionStatus

from durable_agents.cli.errors import DETACHED, OK, CliError, exit_code_of
from durable_agents.cli.lines import LineReader
from durable_agents.cli.progress import (
    Answerer,
    Console,
    ProgressView,
    Watcher,
)
from durable_agents.client import AgentClient, RunHandle, render
from durable_agents.client.connection import (
    QUERY_TIMEOUT,
    Target,
    connect,
    is_running,
    status_name,
)
from durable_agents.client.outcome import RunOutcome
from durable_agents.client.run_input import catalog_profiles, checked_input
from durable_agents.client.workflow_calls import (
    CLOSED_QUERY_TIMEOUT_SECONDS,
    status_from_result,
)
from durable_agents.errors import RunAlreadyStarted
from durable_agents.loop.output import schema_problem
from durable_agents.tools.agents import AgentProfiles

VIA = "cli"
"""`started_via` in the memo of the runs `agent run` starts."""


@dataclass
class Context:
    """What every command needs: the server, JSON or text, and the output streams. With
    `--json`, stdout carries only JSON and progress goes to stderr."""

    target: Target
    json: bool = False
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)

    @property
    def prefix(self) -> str:
        return self.target.command_prefix()

    def console(self) -> Console:
        return Console(self.err if self.json else self.out)

    def emit(self, data: Any) -> None:
        self.out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        self.out.flush()

    def say(self, *lines: str) -> None:
        for line in lines:
            self.out.write(line + "\n")
        self.out.flush()

    async def agents(self, profiles: AgentProfiles | None = None) -> AgentClient:
        """The `AgentClient` every command reaches runs through: on the target's server and
        task queue, marking what it starts `started_via: cli`, reaching any run; `profiles`:
        the agents `agent run --agent` may name."""
        return AgentClient(
            await connect(self.target),
            task_queue=self.target.task_queue,
            via=VIA,
            only_own=False,
            profiles=profiles,
            payload_store=self.target.payload_store,
        )

    async def run(self, workflow_id: str) -> tuple[RunHandle, WorkflowExecutionDescription]:
        """The run `workflow_id` and its description (`RunNotFound` when there is none)."""
        run = (await self.agents()).run(workflow_id)
        return run, await run.describe()


# -- input -------------------------------------------------------------------------------------


def parse_json_object(text: str, option: str) -> dict[str, Any]:
    """A JSON object given on the command line (`@file.json` reads a file)."""
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text()
        except OSError as error:
            raise CliError(f"{option}: cannot read {text[1:]}: {error.strerror}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise CliError(f"{option} is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise CliError(f"{option} must be a JSON object, got {type(value).__name__}")
    return value


def build_input(args: argparse.Namespace, payload_store: bool = False) -> dict[str, Any]:
    """The workflow input: `--input-json` fields, overridden by the explicit options, checked
    against `AgentInput` here so a typo fails before anything starts (with the raised size
    limits when the worker stores large payloads: `payload_store`). Only the given fields
    are sent, so the worker's defaults (its model, every tool) still apply."""
    payload = parse_json_object(args.input_json, "--input-json") if args.input_json else {}
    payload["prompt"] = args.prompt
    if args.tool:
        payload["tools"] = list(args.tool)
    if args.model:
        payload["model"] = args.model
    if args.max_iterations is not None:
        payload["max_iterations"] = args.max_iterations
    if args.model_call:
        payload["model_call"] = args.model_call
    if args.output_schema:
        schema = parse_json_object(f"@{args.output_schema}", "--output-schema")
        problem = schema_problem(schema)
        if problem:
            raise CliError(f"--output-schema: not a valid JSON Schema: {problem}")
        payload["output_schema"] = schema
    return checked_input(payload, payload_store)


# -- following runs ----------------------------------------------------------------------------


async def follow(
    run: RunHandle, ctx: Context, args: argparse.Namespace, *, from_start: bool = False
) -> int:
    """The live view until the run ends; exit code from how it ended (130 on Ctrl-C).
    `from_start`: the run was just started here, its stream is read from its first event
    (else from where it is now)."""
    console = ctx.console()
    view = ProgressView(console, run.id, ctx.prefix)
    answerer = (
        None
        if args.no_input
        else Answerer(run, console, LineReader(), by=args.by, prefix=ctx.prefix)
    )
    outcome = await Watcher(run, view, answerer, from_start=from_start).follow()
    if outcome is None:
        console.close_prompt()
        console.line(
            f"detached from {run.id}; the run goes on. Re-attach: "
            f"{ctx.prefix} watch {shlex.quote(run.id)}"
        )
        return DETACHED
    view.outcome(outcome, show_answer=not ctx.json)
    if ctx.json:
        ctx.emit(outcome.to_json())
    return exit_code_of(outcome)


async def run(args: argparse.Namespace, ctx: Context) -> int:
    """`agent run PROMPT`: start a run, then follow it (unless --no-wait)."""
    payload = build_input(args, ctx.target.payload_store)
    workflow_id = args.id or f"agent-{uuid.uuid4().hex[:10]}"
    if args.agent:  # a profile's settings, the options on top: as `AgentClient.start` makes it
        agents = await ctx.agents(catalog_profiles(ctx.target.settings.tool_modules))
        settings = {k: v for k, v in payload.items() if k != "prompt"}
        payload = agents.workflow_input(args.agent, args.prompt, settings)
    else:
        agents = await ctx.agents()
    try:
        run = await agents.start_input(payload, id=workflow_id, by=args.by)
    except RunAlreadyStarted:
        raise CliError(
            f"a run with workflow id {workflow_id!r} is already running; follow it with "
            f"`{ctx.prefix} watch {shlex.quote(workflow_id)}`"
        ) from None
    wid = shlex.quote(workflow_id)
    if args.no_wait:
        if ctx.json:
            ctx.emit({"workflow_id": workflow_id, "run_id": run.run_id})
        else:
            ctx.say(
                f"started {workflow_id} on task queue {ctx.target.task_queue}",
                f"  follow it:  {ctx.prefix} watch {wid}",
                f"  its result: {ctx.prefix} result {wid}",
            )
        return OK
    tools = ", ".join(payload["tools"]) if "tools" in payload else "all tools"
    ctx.console().line(
        f"started {workflow_id} on task queue {ctx.target.task_queue} · "
        f"model {payload.get('model') or 'worker default'} · {tools}"
    )
    return await follow(run, ctx, args, from_start=True)


async def watch(args: argparse.Namespace, ctx: Context) -> int:
    """`agent watch ID`: the live view of a running run, or the story of a finished one."""
    run, description = await ctx.run(args.workflow_id)
    summary = await description.static_summary()
    about = f" · {summary}" if summary else ""
    console = ctx.console()
    console.line(f"watching {args.workflow_id} ({status_name(description)}){about}")
    if not is_running(description) and description.status != WorkflowExecutionStatus.COMPLETED:
        # A failed or cancelled run has no result to read its steps from; its last status has.
        status = await run.query_status(CLOSED_QUERY_TIMEOUT_SECONDS)
        if status is not None:
            ProgressView(console, run.id, ctx.prefix).steps(status.recent_steps)
    return await follow(run, ctx, args)


# -- reading -----------------------------------------------------------------------------------


async def status(args: argparse.Namespace, ctx: Context) -> int:
    """`agent status ID`: phase, turn, tokens, pending requests and recent steps."""
    run, description = await ctx.run(args.workflow_id)
    running = is_running(description)
    state = await run.query_status(
        QUERY_TIMEOUT.total_seconds() if running else CLOSED_QUERY_TIMEOUT_SECONDS
    )
    outcome: RunOutcome | None = None
    if not running:
        outcome = await run.outcome()
        assert outcome is not None
        if state is None and outcome.result is not None:
            state = status_from_result(outcome.result)
    if state is None and running:
        raise CliError(
            f"run {args.workflow_id!r} is running but no worker answered the status query "
            f"within {QUERY_TIMEOUT.total_seconds():g} s; is a worker polling task queue "
            f"{description.task_queue!r}?"
        )
    execution = status_name(description)
    failure = outcome if outcome is not None and outcome.result is None else None
    if ctx.json:
        data: dict[str, Any] = {"workflow_id": args.workflow_id, "execution_status": execution}
        if state is not None:
            data.update(state.model_dump(mode="json"))
        if failure is not None:
            data["error"] = {"type": failure.error_type, "message": failure.message}
        ctx.emit(data)
        return OK
    if state is not None:
        ctx.say(*render.status_lines(args.workflow_id, execution, state, ctx.prefix))
    else:
        ctx.say(f"{args.workflow_id} · {execution}")
    if failure is not None:
        ctx.say(f"{failure.ending} · {failure.error_type}: {failure.message}")
    return OK


async def pending(args: argparse.Namespace, ctx: Context) -> int:
    """`agent pending ID`: the calls waiting for a person, each with the commands to answer."""
    run, description = await ctx.run(args.workflow_id)
    if not is_running(description):
        if ctx.json:
            ctx.emit([])
        else:
            ctx.say(
                f"{args.workflow_id} has ended ({status_name(description)}); nothing is pending"
            )
        return OK
    requests = await run.pending()
    if ctx.json:
        ctx.emit([request.model_dump(mode="json") for request in requests])
    elif not requests:
        ctx.say(f"nothing is pending in {args.workflow_id}")
    else:
        ctx.say(*render.pending_lines(requests, args.workflow_id, ctx.prefix, full=args.full))
    return OK


async def result(args: argparse.Namespace, ctx: Context) -> int:
    """`agent result ID`: wait for the run to end; its answer, exit code from how it ended."""
    run, description = await ctx.run(args.workflow_id)
    if is_running(description) and not ctx.json:
        ctx.err.write(f"waiting for {args.workflow_id} to finish (Ctrl-C stops waiting)\n")
        ctx.err.flush()
    outcome = await run.outcome()
    assert outcome is not None
    if ctx.json:
        ctx.emit(outcome.to_json())
    elif outcome.result is not None:
        ctx.say(f"done · {render.result_summary(outcome.result)}", "", outcome.result.answer)
    else:
        ctx.say(f"{outcome.ending} · {outcome.error_type}: {outcome.message}")
    return exit_code_of(outcome)
