"""Runs and sessions driven by a server instead of a terminal: what the MCP gateway and the A2A
gateway (`servers/mcp_gateway`, `servers/a2a_gateway`) do with Temporal, in one place, for any
other server that needs the same (the HTTP API of `agent serve`, say).

- `run_input`: the workflow input for a prompt run as an agent profile, with options on top,
  checked against `AgentInput` before anything starts (a bad field is named, nothing runs);
- `RunControl.start`: start it, marked in its memo with what started it (`started_via`), with
  the same static summary and details as `agent run`;
- `RunControl.follow_run` / `follow_turn`: wait until the run (or a session's turn) ends or
  waits for a person, calling back with each line of progress (`ProgressNotes`). They read the
  run's event stream (`StreamWatch`: the stream's poll *query*, nothing recorded in history):
  a tool call that starts or reports progress is told at once, and the `status` query is asked
  only when the stream shows something besides the model's text (a call ended, a call waits for
  a person, a model call's reply was recorded) or every `STATUS_BACKSTOP_SECONDS`; a run from
  before the stream is followed by its `status` alone, as before;
- `RunControl.pending` / `decide`: what waits, and the answer: approve or reject through the
  `decide` update with the CLI's digest rules (`cli.decisions`), reply through the `reply`
  signal after checking that the call is an open question (the signal alone would be ignored
  silently);
- `RunControl.send`: a message to a session (started if new), as `agent chat` sends it.

Only runs and sessions that this kind of server started can be looked at or answered through it
(`open`: the memo says so), so an MCP client cannot approve calls of runs started elsewhere.
Everything is built on the `agent` CLI's helpers and raises what they raise: `CliError`, one line
for the caller. Secrets never enter the input: options are `AgentSettings` fields only.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowUpdateHandle,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from durable_agents.cli.chat import send as send_to_session
from durable_agents.cli.commands import (
    QUERY_TIMEOUT,
    WORKFLOW_TYPE,
    pending_requests,
    query_status,
    run_details,
)
from durable_agents.cli.connection import (
    RunHandle,
    Target,
    connect,
    describe,
    explain_rpc,
    is_running,
    status_name,
)
from durable_agents.cli.decisions import apply_decision, full_digest
from durable_agents.cli.errors import CliError
from durable_agents.cli.outcome import RunOutcome, await_outcome
from durable_agents.cli.progress import StatusDue, StreamWatch
from durable_agents.contracts.agent_input import AgentInput, AgentSettings
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.agents import AgentProfile
from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.events import AgentEvent
from durable_agents.contracts.payload_limits import limits_context_of
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.contracts.session import RunningTurn, SessionStatus, TurnResult
from durable_agents.loop.summaries import first_line
from durable_agents.loop.validation_errors import describe_validation_error
from durable_agents.servers.progress_notes import ProgressNotes
from durable_agents.tools.agents import AgentProfiles
from durable_agents.tools.catalog import CATALOG

DEFAULT_AGENT = "assistant"
"""The agent a request names when it names none: a run with the worker's defaults."""
DEFAULT_AGENT_DESCRIPTION = (
    "A general assistant with every tool the worker offers (calculator, clock, workspace files, "
    "questions to you, ...); calls that change something wait for your approval."
)
STARTED_VIA = "started_via"
"""The memo key that says which server started a run or a session (`mcp`, `a2a`, ...)."""
MAX_OPTIONS_BYTES = 64 * 1024
"""Largest `options` object, as JSON: run settings, not data."""
DIGEST_FIELD = "args_digest"
"""What the servers' interfaces (HTTP, MCP, A2A metadata) call the digest of the arguments."""
DIGEST_REQUIRED = (
    "an approval names the args_digest that `pending` showed for the call (8 to 64 hex "
    "digits), so that it applies only to the arguments that were reviewed"
)
POLL_SECONDS = 0.3
SUMMARY_CHARS = 100
T = TypeVar("T")


class Answer(BaseModel):
    """A person's answer to one call that waits: approve (perhaps with edited `args`), bound to
    `args_digest`, the arguments shown (required: `digest_problem`), reject (with a reason the
    model reads), or reply (the text of an answer to a question)."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=500)
    decision: Literal["approve", "reject", "reply"]
    args: dict[str, Any] | None = Field(
        default=None, description="approve: run the call with these arguments instead."
    )
    args_digest: str | None = Field(
        default=None,
        pattern=r"^[0-9a-fA-F]{8,64}$",
        description="approve (required): the args_digest `pending` showed (8 to 64 hex digits); "
        "the call is approved only while it has exactly those arguments.",
    )
    reason: str | None = Field(default=None, max_length=10_000, description="reject: why.")
    text: str | None = Field(default=None, max_length=50_000, description="reply: the answer.")
    comment: str | None = Field(default=None, max_length=10_000)
    by: str | None = Field(default=None, max_length=200)


@dataclass(frozen=True)
class Paused:
    """A run (or a session's turn) that waits for a person: what waits."""

    workflow_id: str
    pending: list[PendingRequest]


@dataclass(frozen=True)
class Decided:
    """An answer taken: the recorded decision (approve / reject) or the reply sent."""

    call_id: str
    decision: HumanDecision | None = None
    reply: str | None = None


# -- input -------------------------------------------------------------------------------------


def digest_problem(decision: str, args_digest: str | None) -> str | None:
    """Why a decision sent over the network cannot apply as it is: an approval must name the
    digest of the arguments the reviewer saw (a rejection or a reply runs nothing). The Temporal
    CLI's `decide` update still takes one without, and the decision records that none was
    given (`HumanDecision.args_digest`)."""
    if decision == "approve" and args_digest is None:
        return DIGEST_REQUIRED
    return None


def profile_settings(profile: AgentProfile) -> dict[str, Any]:
    """The run settings an agent profile names (what it is), as a run of its own: its
    instructions, tools, agents, model, turn limit, token budget and answer schema."""
    settings: dict[str, Any] = {
        "system_prompt": profile.system_prompt,
        "tools": profile.tools,
        "agents": profile.agents or None,
        "model": profile.model,
        "max_iterations": profile.max_iterations,
        "max_total_tokens": profile.max_total_tokens,
        "output_schema": profile.output_schema,
    }
    return {k: v for k, v in settings.items() if v is not None}


def agent_names(profiles: AgentProfiles) -> list[str]:
    return [DEFAULT_AGENT, *profiles.names()]


def run_input(
    prompt: str,
    agent: str | None,
    options: Mapping[str, Any] | None,
    profiles: AgentProfiles,
    payload_store: bool = False,
) -> dict[str, Any]:
    """The `AgentWorkflow` input: the profile's settings (none for `assistant`), `options` on
    top (only `AgentSettings` fields: links and resume state are the system's), the prompt.
    Checked here, so a bad request is refused naming the field and nothing starts."""
    name = agent or DEFAULT_AGENT
    profile = profiles.get(name) if name != DEFAULT_AGENT else None
    if name != DEFAULT_AGENT and profile is None:
        raise CliError(f"unknown agent {name!r}; agents: {', '.join(agent_names(profiles))}")
    options = dict(options or {})
    size = len(json.dumps(options, ensure_ascii=False, default=str).encode())
    if size > MAX_OPTIONS_BYTES:
        raise CliError(f"options: {size} bytes as JSON, more than {MAX_OPTIONS_BYTES}")
    try:
        AgentSettings.model_validate(options)
        payload = {**(profile_settings(profile) if profile else {}), **options, "prompt": prompt}
        # today's size limits unless the worker stores large payloads (`payload_store`)
        AgentInput.model_validate(payload, context=limits_context_of(payload_store))
    except ValidationError as error:
        raise CliError(f"invalid input: {describe_validation_error(error)}") from None
    return payload


# -- following ---------------------------------------------------------------------------------


NoteCallback = Callable[[str], Awaitable[None]]
"""Receives each line of progress (`ProgressNotes`) while a run or a turn is followed."""


async def _tell(on_note: NoteCallback | None, lines: list[str]) -> None:
    if on_note is not None:
        for line in lines:
            await on_note(line)


async def _until_done(
    ending: asyncio.Future[T],
    look: Callable[[], Awaitable[list[PendingRequest] | None]],
    workflow_id: str,
    ignore: Collection[str],
) -> T | Paused:
    """`ending`'s value, or `Paused` as soon as `look` finds calls waiting (other than those
    in `ignore`: just answered, perhaps not yet taken)."""
    try:
        while True:
            pending = await look()
            if ending.done():
                return ending.result()
            waiting = [p for p in pending or [] if p.call_id not in ignore]
            if waiting:
                return Paused(workflow_id, waiting)
            await asyncio.wait({ending}, timeout=POLL_SECONDS)
    finally:
        if not ending.done():
            ending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await ending


@dataclass
class RunControl:
    """Start, follow and answer the runs and sessions of one kind of server (`via`)."""

    client: Client
    task_queue: str
    via: str
    profiles: AgentProfiles = field(default_factory=AgentProfiles)

    @property
    def started_by(self) -> str:
        return {
            "mcp": "the MCP gateway (`agent mcp`)",
            "a2a": "the A2A gateway (`agent a2a`)",
            "serve": "the HTTP API (`agent serve`)",
        }.get(self.via, f"`{self.via}`")

    async def start(
        self, payload: dict[str, Any], *, workflow_id: str | None = None, by: str | None = None
    ) -> RunHandle:
        """Start an `AgentWorkflow` run with `payload` (see `run_input`)."""
        workflow_id = workflow_id or f"{self.via}-{uuid.uuid4().hex[:10]}"
        try:
            return await self.client.start_workflow(
                WORKFLOW_TYPE,
                payload,
                id=workflow_id,
                task_queue=self.task_queue,
                memo={STARTED_VIA: self.via},
                static_summary=first_line(payload["prompt"], SUMMARY_CHARS),
                static_details=run_details(payload, by, self.started_by),
                result_type=AgentResult,
            )
        except WorkflowAlreadyStartedError:
            raise CliError(f"a run with workflow id {workflow_id!r} is already running") from None
        except RPCError as error:
            raise explain_rpc(error, None, "cannot start the run") from None

    async def open(self, workflow_id: str) -> tuple[RunHandle, WorkflowExecutionDescription]:
        """The run or session `workflow_id`, if this kind of server started it."""
        handle, description = await describe(self.client, workflow_id)
        memo = await description.memo()
        if memo.get(STARTED_VIA) != self.via:
            raise CliError(
                f"{workflow_id!r} was not started through {self.started_by}; only runs and "
                "sessions started through it can be looked at or answered here"
            )
        return handle, description

    async def outcome(self, workflow_id: str, *, wait: bool = True) -> RunOutcome | None:
        """How the run ended (waiting for the end with `wait`), or None while it runs."""
        handle, description = await self.open(workflow_id)
        if is_running(description) and not wait:
            return None
        return await await_outcome(handle)

    async def status(self, workflow_id: str) -> AgentStatus | None:
        """The run's `status` query (None when no worker answers)."""
        handle, _ = await self.open(workflow_id)
        return await query_status(handle, QUERY_TIMEOUT.total_seconds())

    async def follow_run(
        self,
        handle: RunHandle,
        on_note: NoteCallback | None = None,
        ignore: Collection[str] = (),
    ) -> RunOutcome | Paused:
        """Wait until the run ends (its outcome) or waits for a person (`Paused`), handing
        each line of progress to `on_note` on the way (see the module docstring). The stream
        is read from its start, or from where it is now when following again after an answer
        (`ignore`: the calls just answered)."""
        notes = ProgressNotes()
        watch = StreamWatch(handle, from_start=not ignore)  # again after an answer: from now
        due = StatusDue()

        async def look() -> list[PendingRequest] | None:
            news = await watch.news()
            await _tell(on_note, notes.events(news or []))
            if not due.now(news):
                return None
            status = await query_status(handle, QUERY_TIMEOUT.total_seconds())
            if status is None:
                return None
            await _tell(on_note, notes.lines(status))
            return status.pending

        return await _until_done(
            asyncio.ensure_future(await_outcome(handle)), look, handle.id, ignore
        )

    async def send(
        self, session_id: str, text: str, by: str | None = None
    ) -> WorkflowUpdateHandle[TurnResult]:
        """Queue a message in a session (started, marked as ours, if it does not exist yet);
        returns once the session took it. A session that exists must be one of ours."""
        try:
            await describe(self.client, session_id)
        except CliError:
            pass  # no such session yet: it starts with the message
        else:
            await self.open(session_id)
        return await send_to_session(
            self.client, session_id, self.task_queue, text, by, memo={STARTED_VIA: self.via}
        )

    async def follow_turn(
        self,
        session_id: str,
        answered: Awaitable[TurnResult],
        on_note: NoteCallback | None = None,
        ignore: Collection[str] = (),
    ) -> TurnResult | Paused:
        """Wait for the answer of a message sent to a session, or until its turn waits for a
        person (`Paused`), handing each line of progress to `on_note` on the way: an inline
        turn's from the session's stream and `turn_status`, a child turn's (`turns: child`, or
        a turn that outgrew the session) from the child run's stream and `status`."""
        session = self.client.get_workflow_handle(session_id)
        notes = ProgressNotes()
        watches = {session_id: StreamWatch(session)}
        due = StatusDue()

        async def news() -> list[AgentEvent] | None:
            found: list[AgentEvent] = []
            for watch in list(watches.values()):
                events = await watch.news()
                if events is None:
                    return None
                found += events
            return found

        async def turn_status(running: RunningTurn) -> AgentStatus | None:
            if running.inline:
                handle, query = session, "turn_status"
            else:
                handle = self.client.get_workflow_handle(running.workflow_id)
                query = "status"
                watches.setdefault(running.workflow_id, StreamWatch(handle, from_start=True))
            try:
                status: AgentStatus = await handle.query(
                    query, result_type=AgentStatus, rpc_timeout=QUERY_TIMEOUT
                )
            except Exception:  # no worker answered this time, the child not started yet
                return None
            return status

        async def look() -> list[PendingRequest] | None:
            events = await news()
            await _tell(on_note, notes.events(events or []))
            if not due.now(events):
                return None
            try:
                status = await session.query(
                    "status", result_type=SessionStatus, rpc_timeout=QUERY_TIMEOUT
                )
            except Exception:  # no worker answered this time: look again
                return None
            if status.running is not None:
                turn = await turn_status(status.running)
                if turn is not None:
                    await _tell(on_note, notes.lines(turn))
            return status.pending

        return await _until_done(asyncio.ensure_future(answered), look, session_id, ignore)

    def turn_update(self, session_id: str, update_id: str) -> WorkflowUpdateHandle[TurnResult]:
        """The `send` update a message was taken with, to wait for its answer later."""
        return self.client.get_workflow_handle(session_id).get_update_handle(
            update_id, result_type=TurnResult
        )

    # -- answering -----------------------------------------------------------------------------

    async def pending(self, workflow_id: str) -> list[PendingRequest]:
        """What waits for a person in a run or session of ours ([] once it ended)."""
        handle, description = await self.open(workflow_id)
        if not is_running(description):
            return []
        return await pending_requests(handle, description.task_queue)

    async def decide(self, workflow_id: str, answer: Answer) -> Decided:
        """Answer one pending call of a run or session of ours (see `Answer`)."""
        problem = digest_problem(answer.decision, answer.args_digest)
        if problem is not None:
            raise CliError(f"invalid input: {DIGEST_FIELD}: {problem}")
        handle, description = await self.open(workflow_id)
        if not is_running(description):
            raise CliError(
                f"{workflow_id!r} has already ended ({status_name(description).lower()}); "
                "nothing waits in it"
            )
        task_queue = description.task_queue
        requests = await pending_requests(handle, task_queue)
        target = next((r for r in requests if r.call_id == answer.call_id), None)
        if target is None:
            open_ids = ", ".join(r.call_id for r in requests) or "none"
            raise CliError(
                f"no pending call {answer.call_id!r} in {workflow_id} (unknown or already "
                f"answered); pending: {open_ids}"
            )
        if answer.decision == "reply":
            return await self._reply(handle, target, answer)
        if target.kind.decided_by is not RequestKind.APPROVAL:
            raise CliError(
                f"cannot {answer.decision} {answer.call_id!r}: it waits for {target.kind.wanted}"
            )
        payload: dict[str, Any] = {
            "call_id": answer.call_id,
            "decision": answer.decision,
            **answer.model_dump(include={"by", "comment", "reason"}, exclude_none=True),
        }
        if answer.args is not None:
            if answer.decision != "approve":
                raise CliError("args: edited arguments go with decision 'approve' only")
            payload["args"] = answer.args
        if answer.args_digest is not None:
            payload["args_digest"] = await full_digest(
                handle, task_queue, answer.call_id, answer.args_digest.lower(), DIGEST_FIELD
            )
        decision = await apply_decision(handle, task_queue, payload)
        return Decided(answer.call_id, decision=decision)

    async def _reply(self, handle: RunHandle, target: PendingRequest, answer: Answer) -> Decided:
        if target.kind.decided_by is not RequestKind.QUESTION:
            raise CliError(f"cannot reply to {answer.call_id!r}: it waits for {target.kind.wanted}")
        if not answer.text:
            raise CliError("text: a reply needs the text of the answer")
        payload = answer.model_dump(include={"call_id", "text", "by"}, exclude_none=True)
        try:
            await handle.signal("reply", payload)
        except RPCError as error:
            raise explain_rpc(error, handle.id, f"cannot reply to {answer.call_id!r}") from None
        return Decided(answer.call_id, reply=answer.text)


async def connect_control(target: Target, via: str) -> RunControl:
    """A `RunControl` for `via` on the command line's server and task queue, with the agent
    profiles of the application's catalog (and of the `AGENT_TOOL_MODULES` it loads, as the
    worker does, so both offer the same agents)."""
    for module in target.settings.tool_modules:
        importlib.import_module(module)
    client = await connect(target)
    return RunControl(client, target.task_queue, via, CATALOG.agents)
