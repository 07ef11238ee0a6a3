"""Runs and sessions driven by a server instead of a terminal: what the MCP gateway and the A2A
gateway (`servers/mcp_gateway`, `servers/a2a_gateway`) do with Temporal, in one place, for any
other server that needs the same (the HTTP API of `agent serve`, say).

- `run_input` (`client.run_input`): the workflow input for a prompt run as an agent profile,
  with options on top, checked against `AgentInput` before anything starts (a bad field is
  named, nothing runs);
- `RunControl.start`: start it through `AgentClient`, marked in its memo with what started it
  (`started_via`), with the same static summary and details as `agent run`;
- `RunControl.follow_run` / `follow_turn`: wait until the run (or a session's turn) ends or
  waits for a person, calling back with each line of progress (`ProgressNotes`). They read the
  run's event stream (`StreamWatch`: the stream's poll *query*, nothing recorded in history):
  a tool call that starts or reports progress is told at once, and the `status` query is asked
  only when the stream shows something besides the model's text (a call ended, a call waits for
  a person, a model call's reply was recorded) or every `STATUS_BACKSTOP_SECONDS`; a run from
  before the stream is followed by its `status` alone, as before;
- `RunControl.pending` / `decide`: what waits, and the answer (`RunHandle.approve`, `reject`,
  `reply`: the digest rules, and a reply only to an open question);
- `RunControl.send`: a message to a session (started if new), as `agent chat` sends it.

Only runs and sessions that this kind of server started can be looked at or answered through it
(`AgentClient(via=...)`: the memo says so), so an MCP client cannot approve calls of runs started
elsewhere. Everything goes through `AgentClient` and raises its typed errors
(`durable_agents.errors`), one line for the caller. Secrets never enter the input: options are
`AgentSettings` fields only.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from temporalio.client import Client, WorkflowUpdateHandle

from durable_agents.client import AgentClient, RunHandle, RunOutcome
from durable_agents.client.connection import Target, connect
from durable_agents.client.run_handle import DIGEST_FIELD, STARTED_VIA
from durable_agents.client.run_input import (
    DEFAULT_AGENT,
    DEFAULT_AGENT_DESCRIPTION,
    catalog_profiles,
    run_input,
)
from durable_agents.client.stream_watch import StatusDue, StreamWatch
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.events import AgentEvent
from durable_agents.contracts.principals import Principal
from durable_agents.contracts.session import RunningTurn, TurnResult
from durable_agents.errors import InvalidInput
from durable_agents.servers.auth.authenticator import API_TOKEN_PRINCIPAL, LOCAL_PRINCIPAL
from durable_agents.servers.progress_notes import ProgressNotes
from durable_agents.tools.agents import AgentProfiles

__all__ = [
    "DEFAULT_AGENT",
    "DEFAULT_AGENT_DESCRIPTION",
    "DIGEST_FIELD",
    "STARTED_VIA",
    "run_input",
]
DIGEST_REQUIRED = (
    "an approval names the args_digest that `pending` showed for the call (8 to 64 hex "
    "digits), so that it applies only to the arguments that were reviewed"
)
POLL_SECONDS = 0.3
UNNAMED_PRINCIPALS = frozenset({LOCAL_PRINCIPAL, API_TOKEN_PRINCIPAL})
"""Principals that stand for no one person (`as_caller`)."""
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


# -- who asks ----------------------------------------------------------------------------------


def as_caller(agents: AgentClient, principal: Principal | None) -> AgentClient:
    """`agents` for one request of `principal` (`request.state.principal`; None: no
    authentication step ran, as MCP over stdio): only its tenant's runs (unless an admin), its
    runs started in its tenant, its decisions signed by it. The stand-ins of a server without
    credentials and of `AGENT_API_TOKEN` name nobody, so they do not sign."""
    return agents.as_principal(principal, signs=principal not in UNNAMED_PRINCIPALS)


# -- input -------------------------------------------------------------------------------------


def digest_problem(decision: str, args_digest: str | None) -> str | None:
    """Why a decision sent over the network cannot apply as it is: an approval must name the
    digest of the arguments the reviewer saw (a rejection or a reply runs nothing). The Temporal
    CLI's `decide` update still takes one without, and the decision records that none was
    given (`HumanDecision.args_digest`)."""
    if decision == "approve" and args_digest is None:
        return DIGEST_REQUIRED
    return None


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
    """Start, follow and answer the runs and sessions of one kind of server (`via`), through
    an `AgentClient` that reaches only what that kind of server started."""

    client: Client
    task_queue: str
    via: str
    profiles: AgentProfiles = field(default_factory=AgentProfiles)

    def __post_init__(self) -> None:
        self.agents = AgentClient(
            self.client, task_queue=self.task_queue, via=self.via, profiles=self.profiles
        )

    def of(self, principal: Principal | None) -> RunControl:
        """This control for one call of `principal` (`as_caller`)."""
        scoped = copy.copy(self)
        scoped.agents = as_caller(self.agents, principal)
        return scoped

    async def start(
        self,
        payload: dict[str, Any],
        *,
        workflow_id: str | None = None,
        by: str | None = None,
        memo: dict[str, str] | None = None,
    ) -> RunHandle:
        """Start an `AgentWorkflow` run with `payload` (see `run_input`), `memo` added to its
        memo."""
        return await self.agents.start_input(payload, id=workflow_id, by=by, memo=memo)

    async def open(self, workflow_id: str) -> RunHandle:
        """The run or session `workflow_id`, if this kind of server started it."""
        return await self.agents.open_run(workflow_id)

    async def outcome(self, workflow_id: str, *, wait: bool = True) -> RunOutcome | None:
        """How the run ended (waiting for the end with `wait`), or None while it runs."""
        return await self.agents.run(workflow_id).outcome(wait=wait)

    async def follow_run(
        self,
        run: RunHandle,
        on_note: NoteCallback | None = None,
        ignore: Collection[str] = (),
    ) -> RunOutcome | Paused:
        """Wait until the run ends (its outcome) or waits for a person (`Paused`), handing
        each line of progress to `on_note` on the way (see the module docstring). The stream
        is read from its start, or from where it is now when following again after an answer
        (`ignore`: the calls just answered)."""
        notes = ProgressNotes()
        watch = StreamWatch(run.workflow, from_start=not ignore)  # again after an answer: now
        due = StatusDue()

        async def look() -> list[PendingRequest] | None:
            news = await watch.news()
            await _tell(on_note, notes.events(news or []))
            if not due.now(news):
                return None
            status = await run.query_status()
            if status is None:
                return None
            await _tell(on_note, notes.lines(status))
            return status.pending

        ending = asyncio.ensure_future(run.outcome())
        ended = await _until_done(ending, look, run.id, ignore)
        assert ended is not None
        return ended

    async def send(
        self, session_id: str, text: str, by: str | None = None
    ) -> WorkflowUpdateHandle[TurnResult]:
        """Queue a message in a session (started, marked as ours, if it does not exist yet);
        returns once the session took it. A session that exists must be one of ours."""
        return await self.agents.session(session_id).send_nowait(text, by=by)

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
        session = self.agents.session(session_id)
        notes = ProgressNotes()
        watches = {session_id: StreamWatch(session.workflow)}
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
                return await session.turn_status()
            child = session.turn_run(running)  # not started yet: no answer this time
            watches.setdefault(running.workflow_id, StreamWatch(child.workflow, from_start=True))
            return await child.query_status()

        async def look() -> list[PendingRequest] | None:
            events = await news()
            await _tell(on_note, notes.events(events or []))
            if not due.now(events):
                return None
            status = await session.query_status()
            if status is None:  # no worker answered this time: look again
                return None
            if status.running is not None:
                turn = await turn_status(status.running)
                if turn is not None:
                    await _tell(on_note, notes.lines(turn))
            return status.pending

        return await _until_done(asyncio.ensure_future(answered), look, session_id, ignore)

    def turn_update(self, session_id: str, update_id: str) -> WorkflowUpdateHandle[TurnResult]:
        """The `send` update a message was taken with, to wait for its answer later."""
        return self.agents.session(session_id).turn(update_id)

    # -- answering -----------------------------------------------------------------------------

    async def pending(self, workflow_id: str) -> list[PendingRequest]:
        """What waits for a person in a run or session of ours ([] once it ended)."""
        return await self.agents.run(workflow_id).pending()

    async def decide(self, workflow_id: str, answer: Answer) -> Decided:
        """Answer one pending call of a run or session of ours (see `Answer`)."""
        problem = digest_problem(answer.decision, answer.args_digest)
        if problem is not None:
            raise InvalidInput(f"invalid input: {DIGEST_FIELD}: {problem}", field=DIGEST_FIELD)
        if answer.args is not None and answer.decision != "approve":
            raise InvalidInput(
                "args: edited arguments go with decision 'approve' only", field="args"
            )
        run = self.agents.run(workflow_id)
        if answer.decision == "reply":
            if not answer.text:
                raise InvalidInput("text: a reply needs the text of the answer", field="text")
            await run.reply(answer.call_id, answer.text, by=answer.by)
            return Decided(answer.call_id, reply=answer.text)
        if answer.decision == "approve":
            decision = await run.approve(
                answer.call_id,
                digest=answer.args_digest,
                edit=answer.args,
                by=answer.by,
                comment=answer.comment,
            )
        else:
            decision = await run.reject(answer.call_id, reason=answer.reason, by=answer.by)
        return Decided(answer.call_id, decision=decision)


async def connect_control(target: Target, via: str) -> RunControl:
    """A `RunControl` for `via` on the command line's server and task queue, with the agent
    profiles of the application's catalog (and of the `AGENT_TOOL_MODULES` it loads, as the
    worker does, so both offer the same agents)."""
    profiles = catalog_profiles(target.settings.tool_modules)
    return RunControl(await connect(target), target.task_queue, via, profiles)
