"""`SessionWorkflow`: a long-lived conversation under a session id (the workflow id).

Messages arrive by update `send` (waits for and returns the turn's result) or signal `send`
(fire and forget); they are answered one at a time, in order. Each turn runs the agent loop
with the remembered earlier turns as `history`:

- `turns: inline` (the default): inside the session's own history (`InlineTurn`). The turn's
  model and tool activities are the session's; its first model call names the remembered
  messages the worker's context cache holds instead of sending them again. The session
  continues-as-new between turns.
- `turns: child`: as a child `AgentWorkflow` `<session>/turn-<n>`, which reports its end by a
  signal to the session id (reaching whichever run is current), so the session can
  continue-as-new while a long turn runs.

Approvals, questions, steering and plan edits work as in a one-shot run, through the same
handlers (`workflows.people.PeopleHandlers`): the session hands `approve` / `reject` / `reply`
/ `steer` and the updates `decide` / `edit_plan` / `tool_result` to the running turn, inline or
child (`SessionPeople`: a child turn's updates through the `forward_to_turn` activity), and lists
its pending requests; `cancel_turn` stops the running turn only.

The session's event stream (`RunEvents`, carried across continue-as-new) carries
`turn_started` and `turn_finished` for every turn, an inline turn's own events between them
(each with its `turn`), and `session_ended`; a child turn's events are on its run's stream.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Literal

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import WorkflowStream
from temporalio.exceptions import ApplicationError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from durable_agents.contracts.agent_input import AgentInput, SessionLink, has_visible_text
    from durable_agents.contracts.agent_status import AgentStatus, Phase
    from durable_agents.contracts.approvals import PendingRequest
    from durable_agents.contracts.errors import INVALID_INPUT
    from durable_agents.contracts.events import SessionEnded, TurnFinished, TurnMoved, TurnStarted
    from durable_agents.contracts.model_io import CachedConversation
    from durable_agents.contracts.payload_limits import PayloadLimits, limits
    from durable_agents.contracts.scratchpad import Scratchpad
    from durable_agents.contracts.session import (
        CancelTurn,
        EndSession,
        MemoryTurn,
        PendingList,
        QueuedMessage,
        RunningTurn,
        SendMessage,
        SessionCarry,
        SessionInput,
        SessionResult,
        SessionState,
        SessionStatus,
        TurnReport,
        TurnResult,
    )
    from durable_agents.loop.approvals import as_shown
    from durable_agents.loop.event_views import event_text, headline
    from durable_agents.loop.input_validation import output_problem
    from durable_agents.loop.limits import should_continue_as_new
    from durable_agents.loop.memory import (
        incomplete_reason,
        last_answer,
        memory_messages,
        memory_turn,
        remember,
    )
    from durable_agents.loop.pasted_commands import aimed_requests
    from durable_agents.loop.search_attributes import search_state, tenant_memo
    from durable_agents.loop.session_details import idle_details, turn_details
    from durable_agents.loop.session_queue import queue_refusal
    from durable_agents.workflows.definitions import definition_at_turn, definition_shown
    from durable_agents.workflows.inline_turn import InlineTurn
    from durable_agents.workflows.input_guard import one_payload
    from durable_agents.workflows.model_gateway import run_conversation
    from durable_agents.workflows.people import PeopleHandlers
    from durable_agents.workflows.refusals import (
        NO_INPUT,
        BadInput,
        limits_context,
        parse_or_ignore,
        parse_or_refuse,
        read_payload,
        refuse,
    )
    from durable_agents.workflows.run_events import (
        RunEvents,
        carried_stream_state,
        handlers_finished_but_polls,
    )
    from durable_agents.workflows.search_attributes import SearchAttributeKeeper
    from durable_agents.workflows.session_people import SessionPeople
    from durable_agents.workflows.worker_catalog import worker_catalog

SESSION_REFUSED = "SessionRefused"


def queued_message(queued_id: str, message: SendMessage) -> QueuedMessage:
    return QueuedMessage(id=queued_id, text=message.text, by=message.by, **message.overrides())


@workflow.defn(name="SessionWorkflow")
class SessionWorkflow(PeopleHandlers):
    """A conversation: update/signal `send`, signal `end`, queries `history` and `status`."""

    @workflow.init
    @one_payload
    def __init__(self, raw_input: RawValue = NO_INPUT, *extra: RawValue) -> None:
        """The input is read here, before any handler runs: signals that arrive with a
        continued run's start (an approval for the carried turn) must see what it carries. An
        input that does not parse fails the run in `run`."""
        self.stream = WorkflowStream(prior_state=carried_stream_state(raw_input))
        self._events = RunEvents(self.stream)
        self._params = SessionInput()
        self._carry = SessionCarry()
        self._reports: dict[str, TurnReport] = {}
        self._results: dict[str, TurnResult] = {}
        self._turn: InlineTurn | None = None
        self._search = SearchAttributeKeeper()
        self._people = SessionPeople(self)
        self.people = self._people
        self._input_taken = False
        with contextlib.suppress(ValidationError, BadInput):
            raw = read_payload(raw_input, max_bytes=None, missing={})
            self._read_input(SessionInput.model_validate(raw, context=limits_context()))

    @staticmethod
    def _session_input(raw_input: RawValue) -> SessionInput:
        """The session's input, or a refusal naming the problem."""
        return parse_or_refuse(
            SessionInput, raw_input, "SessionWorkflow input", INVALID_INPUT, max_bytes=None,
            missing={}, context=limits_context(),
        )  # fmt: skip

    def _read_input(self, params: SessionInput) -> None:
        """Take the settings and what a continued run carries; messages that reached this run
        already come after the carried ones."""
        self._input_taken = True
        self._params = params
        carried = params.carry
        if carried is not None:
            self._carry = carried.model_copy(
                update={"queued": [*carried.queued, *self._carry.queued], "runs": carried.runs + 1}
            )

    # -- what an inline turn needs from its session (`inline_turn.HostSession`) ------------------

    @property
    def conversation(self) -> CachedConversation:
        """One context-cache entry for the whole session, shared by its turns and carried
        across continue-as-new (`SessionCarry.conversation`)."""
        if self._carry.conversation is None:
            self._carry.conversation = run_conversation()
        return self._carry.conversation

    def pending_changed(self, pending: list[PendingRequest]) -> None:
        self._carry.pending = pending
        self._show_details()

    def details_changed(self) -> None:
        self._show_details()

    # -- messages in ---------------------------------------------------------------------------

    @workflow.update(name="send")
    async def send(self, raw: RawValue = NO_INPUT) -> TurnResult:
        """`{"text": "...", "by"?: "..."}`: queue a message and return its turn's result."""
        message = parse_or_refuse(
            SendMessage, raw, "message", SESSION_REFUSED, max_bytes=self._limits.signal_bytes
        )
        info = workflow.current_update_info()
        # Each queued message needs its own id; an update's id can arrive empty from some clients.
        queued_id = info.id if info and info.id else f"update-{workflow.uuid4()}"
        self._carry.queued.append(queued_message(queued_id, message))
        await workflow.wait_condition(lambda: queued_id in self._results)
        return self._results.pop(queued_id)

    @send.validator
    def validate_send(self, raw: RawValue = NO_INPUT) -> None:
        """Refuse before anything enters history: empty or oversized text, a session that ended."""
        self._check_message(raw)

    @workflow.signal(name="send")
    def send_signal(self, raw: RawValue = NO_INPUT) -> None:
        """Fire-and-forget `send`; a message that cannot be taken is logged and ignored."""
        try:
            message = self._check_message(raw)
        except ApplicationError as error:
            workflow.logger.warning("signal send ignored: %s", error.message)
            return
        self._carry.queued.append(queued_message(f"signal-{workflow.uuid4()}", message))

    @workflow.signal(name="end")
    def end(self, raw: RawValue = NO_INPUT) -> None:
        """`{"reason"?: "...", "by"?: "..."}` (or no input): answer what is queued, then close
        the session. An input that cannot be read is logged and ignored, as for every signal:
        the session stays open."""
        request = parse_or_ignore(EndSession, raw, "end", missing={})
        if request is None:
            return
        self._carry.ended = True
        self._carry.end_reason = request.reason or (
            f"ended by {request.by}" if request.by else None
        )

    @property
    def _limits(self) -> PayloadLimits:
        """The size limits of this session's messages: the raised ones when its input took
        them (`SessionInput.raised_limits`, only on a worker that stores large payloads)."""
        return limits(self._params.raised_limits)

    def _check_message(self, raw: Any) -> SendMessage:
        if self._carry.ended:
            refuse("the session has ended", SESSION_REFUSED)
        message = parse_or_refuse(
            SendMessage, raw, "message", SESSION_REFUSED, max_bytes=self._limits.signal_bytes
        )
        if not has_visible_text(message.text):
            refuse("text: the message is empty", SESSION_REFUSED)
        if len(message.text) > self._params.max_message_chars:
            refuse(
                f"text: the message has {len(message.text)} characters; the most is "
                f"{self._params.max_message_chars}",
                SESSION_REFUSED,
            )
        queue_full = queue_refusal(self._carry.queued, message, self._limits.queued_chars)
        if queue_full:
            refuse(queue_full, SESSION_REFUSED)
        if message.overrides():
            settings = self._params.agent.model_copy(update=message.overrides())
            catalog = worker_catalog()
            problem = output_problem(settings, catalog.tools.names(), catalog.output_types.names())
            if problem:
                refuse(problem, SESSION_REFUSED)
        return message

    # -- from the turns ------------------------------------------------------------------------

    @workflow.signal(name="turn_finished")
    def turn_finished(self, raw: RawValue = NO_INPUT) -> None:
        """From the running child turn: how it ended."""
        report = parse_or_ignore(TurnReport, raw, "turn_finished")
        if report is not None and self._from_running_turn(
            "turn_finished", report.workflow_id, report.token, report.turn_id
        ):
            self._reports[report.turn_id] = report

    @workflow.signal(name="turn_pending")
    def turn_pending(self, raw: RawValue = NO_INPUT) -> None:
        """From the running child turn: its calls waiting for a person."""
        try:
            sent = read_payload(raw, max_bytes=None)  # bounded by Temporal; checked below
        except BadInput as error:
            workflow.logger.warning("signal turn_pending ignored: invalid input: %s", error)
            return
        report = parse_or_ignore(PendingList, sent, "turn_pending")
        running = self._carry.running
        if report is None or running is None:
            return
        if not self._from_running_turn("turn_pending", report.workflow_id, report.token):
            return
        if report.sequence:
            if report.sequence <= running.reports:
                return  # an older report that arrived late: the turn has moved on
            running.reports = report.sequence
        self._carry.pending = as_shown(report.pending)
        self._show_details()

    def _from_running_turn(
        self, signal: str, workflow_id: str, token: str, turn_id: str | None = None
    ) -> bool:
        """Whether a report comes from the running child turn (its run id and the token the
        session gave it). Anything else is logged and ignored: a client cannot finish or fill
        another's turn."""
        running = self._carry.running
        if (
            running is None
            or running.inline
            or token != running.token
            or workflow_id != running.workflow_id
            or (turn_id is not None and turn_id != running.message.id)
        ):
            workflow.logger.warning("signal %s ignored: not from the running child turn", signal)
            return False
        return True

    # -- what people send the running turn: `PeopleHandlers`, landing in `SessionPeople` -------

    @property
    def running_turn(self) -> RunningTurn | None:
        return self._carry.running

    @property
    def inline_turn(self) -> InlineTurn | None:
        return self._turn

    @property
    def running_turn_pending(self) -> list[PendingRequest]:
        return self._carry.pending

    @workflow.signal(name="cancel_turn")
    async def cancel_turn(self, raw: RawValue = NO_INPUT) -> None:
        """Cancel the running turn, not the session: it is remembered as not completed and the
        next message is answered. Takes no input, or `{"reason"?: "...", "by"?: "..."}`."""
        unreadable = parse_or_ignore(CancelTurn, raw, "cancel_turn", missing={}) is None
        if unreadable:
            return
        running = self._carry.running
        if running is None:
            workflow.logger.warning("signal cancel_turn ignored: no turn is running")
        elif self._turn is not None:
            self._turn.cancel()
        else:
            await workflow.get_external_workflow_handle(running.workflow_id).cancel()

    # -- queries -------------------------------------------------------------------------------

    @workflow.query(name="history")
    def history(self) -> list[MemoryTurn]:
        """The remembered turns (what the next turn's model sees), oldest first."""
        return list(self._carry.memory)

    @workflow.query(name="status")
    def status(self) -> SessionStatus:
        """Where the session is: its state, turns, queued messages, the running turn, what
        waits for a person, token usage and runs."""
        carry = self._carry
        state: SessionState = (
            "ended"
            if carry.ended and not carry.queued and not carry.running
            else "running"
            if carry.running
            else "idle"
        )
        return SessionStatus(
            state=state,
            turns=carry.turns,
            queued=len(carry.queued),
            running=carry.running,
            pending=aimed_requests(carry.pending, worker_catalog().command_server),
            usage=carry.usage,
            remembered_turns=len(carry.memory),
            runs=carry.runs,
        )

    @workflow.query(name="turn_status")
    def turn_status(self) -> AgentStatus:
        """The running inline turn's `status` (what `AgentWorkflow.status` shows of a run); a
        child turn's is refused, naming the run that shows it."""
        return self._people.turn_status()

    # -- the conversation ----------------------------------------------------------------------

    @workflow.run
    @one_payload
    async def run(self, raw_input: RawValue = NO_INPUT, *extra: RawValue) -> SessionResult:
        params = self._session_input(raw_input)
        continued = workflow.info().continued_run_id is not None
        if params.carry is not None and not continued:
            refuse(
                "invalid SessionWorkflow input: carry: set by the session itself when it "
                "continues-as-new; this run does not continue another",
                INVALID_INPUT,
            )
        if not self._input_taken:
            self._read_input(params)
        if self._carry.started_at is None:
            self._carry.started_at = workflow.now()
        self._show_details()

        while True:
            if self._turn is not None:
                await self._finish_inline_turn()
                continue
            if self._carry.running is not None:
                await self._wait_for(self._turn_done)
                if self._turn_done():
                    self._finish_turn()
                    continue
                await self._continue_as_new()  # a long wait: carry the running turn along
            if self._can_continue_as_new():
                await self._continue_as_new()
            await self._wait_for(lambda: bool(self._carry.queued) or self._carry.ended)
            if self._carry.queued:
                await self._check_definition()
                await self._start_turn(self._carry.queued.pop(0))
            elif self._carry.ended:
                break
            else:
                await self._continue_as_new()

        self._events.emit(SessionEnded, turns=self._carry.turns, reason=self._carry.end_reason)
        await self._events.close()  # subscribers released, every handler finished
        return SessionResult(
            turns=self._carry.turns,
            usage=self._carry.usage,
            reason=self._carry.end_reason,
            last_answer=last_answer(self._carry.memory),
            runs=self._carry.runs,
        )

    async def _wait_for(self, ready: Callable[[], bool]) -> None:
        """Wait until `ready`, or until the session should continue-as-new."""
        await workflow.wait_condition(lambda: ready() or self._can_continue_as_new())

    def _turn_done(self) -> bool:
        running = self._carry.running
        return running is not None and running.message.id in self._reports

    async def _finish_inline_turn(self) -> None:
        """Wait for the inline turn (cancelling the session cancels it first), then take its
        report as a child turn's `turn_finished` is taken."""
        turn = self._turn
        running = self._carry.running
        assert turn is not None and running is not None
        try:
            await workflow.wait_condition(lambda: turn.done)
        except BaseException:
            turn.cancel()
            await turn.wait()
            raise
        report = turn.report()
        self._turn = None
        if report is None and turn.outgrown is not None:
            await self._move_turn_to_child(running, turn.agent_input, turn.outgrown)
            return
        assert report is not None
        self._reports[running.message.id] = report
        self._finish_turn()

    async def _move_turn_to_child(
        self, running: RunningTurn, agent_input: AgentInput, carried: Scratchpad
    ) -> None:
        """The rest of a turn that outgrew the session's history runs as the child run
        `<session>/turn-<n>`, from its carried state; it reports as a child turn does."""
        session = agent_input.session
        assert session is not None and session.scope is not None
        running.token = workflow.uuid4().hex
        child_input = agent_input.model_copy(
            update={
                "resume": carried,
                "session": session.model_copy(update={"scope": None, "token": running.token}),
            }
        )
        running.workflow_id, running.inline = session.scope, False
        self._show_details()
        self._events.emit(TurnMoved, turn=running.turn, child_workflow_id=session.scope)
        await self._start_child_turn(child_input, session.scope, running.turn)

    async def _start_turn(self, message: QueuedMessage) -> None:
        carry = self._carry
        carry.turns += 1
        session_id = workflow.info().workflow_id
        turn_id = message.id
        turn_scope = f"{session_id}/turn-{carry.turns}"
        inline = self._params.turns == "inline"
        token = "" if inline else workflow.uuid4().hex
        agent_input = AgentInput(
            **{**self._params.agent.model_dump(), **message.overrides()},
            prompt=message.text,
            history=memory_messages(carry.memory),
            definition=carry.definition,
            session=SessionLink(
                workflow_id=session_id,
                turn_id=turn_id,
                token=token,
                scope=turn_scope if inline else None,
                turn=carry.turns,
            ),
        )
        carry.running = RunningTurn(
            turn=carry.turns,
            message=message,
            workflow_id=session_id if inline else turn_scope,
            inline=inline,
            token=token,
        )
        carry.pending = []
        self._show_details()
        self._events.emit(
            TurnStarted,
            turn=carry.turns,
            message=headline(message.text),
            by=message.by,
            child_workflow_id=None if inline else turn_scope,
        )
        if inline:
            self._turn = InlineTurn(self, agent_input, self._events.for_turn(carry.turns))
            return
        await self._start_child_turn(agent_input, turn_scope, carry.turns)

    async def _check_definition(self) -> None:
        """At the turn boundary: keep the session's definition, or migrate to the worker's
        (`workflows.definitions`); the history records which."""
        settings, self._carry.definition = await definition_at_turn(
            self._params.agent, self._carry.definition, self._carry.turns + 1
        )
        if settings is not self._params.agent:
            self._params = self._params.model_copy(update={"agent": settings})

    async def _start_child_turn(self, agent_input: AgentInput, workflow_id: str, turn: int) -> None:
        """A turn as a child `AgentWorkflow`, which reports its end by signal (`turn_finished`)."""
        session_id = workflow.info().workflow_id
        await workflow.start_child_workflow(
            "AgentWorkflow",
            agent_input,
            id=workflow_id,
            task_queue=workflow.info().task_queue,
            parent_close_policy=ParentClosePolicy.ABANDON,
            static_summary=f"session {session_id} · turn {turn}",
            memo=tenant_memo(agent_input.tenant),
        )

    def _finish_turn(self) -> None:
        carry = self._carry
        running = carry.running
        if running is None or running.message.id not in self._reports:
            return
        report = self._reports.pop(running.message.id)
        carry.usage = carry.usage + report.usage
        # A turn that stopped at a limit or failed is remembered as not completed, never with
        # its stop text or error as if the assistant had said it.
        incomplete = incomplete_reason(report, self._params.agent)
        turn = memory_turn(
            running.turn,
            running.message.text,
            report.answer,
            report.steps,
            self._params.memory_mode,
            incomplete,
        )
        carry.memory = remember(
            carry.memory,
            turn,
            max_turns=self._params.memory_max_turns,
            max_tokens=self._params.memory_max_tokens,
        )
        self._results[running.message.id] = TurnResult(
            turn=running.turn,
            workflow_id=report.workflow_id,
            answer=report.answer,
            stop_reason=report.stop_reason,
            steps=report.steps,
            usage=report.usage,
            error=report.error,
            output=report.output,
        )
        self._events.emit(
            TurnFinished,
            turn=running.turn,
            stop_reason=report.stop_reason,
            answer=report.answer,
            error=event_text(report.error) if report.error else None,
            child_workflow_id=None if running.inline else running.workflow_id,
        )
        carry.running = None
        carry.pending = []
        self._show_details()

    def _show_details(self) -> None:
        """The Web UI's current details (Markdown): the running turn and the commands that
        answer its pending requests, or the totals and the command that sends a message."""
        carry = self._carry
        running = carry.running
        server = worker_catalog().command_server  # what the pasted commands name
        if running is not None:
            details = turn_details(
                running.turn,
                running.message.text,
                None if running.inline else running.workflow_id,
                aimed_requests(carry.pending, server),
            )
            phase: Phase | Literal["idle"] = "thinking"
        else:
            last = carry.memory[-1] if carry.memory else None
            details = idle_details(
                workflow.info().workflow_id,
                carry.turns,
                carry.usage,
                len(carry.queued),
                last.incomplete if last is not None and last.turn == carry.turns else None,
                server=server,
            )
            phase = "idle"
        workflow.set_current_details(details)
        tenant, defined = self._params.tenant, definition_shown(carry.definition)
        self._search.keep(
            search_state(phase, carry.pending, carry.usage.total_tokens, tenant, defined)
        )

    def _can_continue_as_new(self) -> bool:
        """The history is long and no handler is in flight (a `send` update waiting for its
        turn must get its answer from this run; a subscriber's waiting poll follows to the
        next run)."""
        info = workflow.info()
        return handlers_finished_but_polls() and should_continue_as_new(
            events=info.get_current_history_length(),
            size_bytes=info.get_current_history_size(),
            suggested=info.is_continue_as_new_suggested(),
            max_events=self._params.continue_as_new_after_events,
            max_bytes=self._params.agent.continue_as_new_after_bytes,
        )

    async def _continue_as_new(self) -> None:
        """Hand over to a fresh run carrying memory, queued messages, a running turn and the
        event stream. Called when no handler but the stream's subscribers' polls runs: they
        are released first (in this same workflow task, so no message can arrive between) and
        follow to the next run."""
        await self._events.close()
        info = workflow.info()
        workflow.logger.info(
            "session continuing as new after %d events: %d remembered turns, %d queued",
            info.get_current_history_length(),
            len(self._carry.memory),
            len(self._carry.queued),
        )
        carried = {"carry": self._carry, "stream": self._events.state()}
        workflow.continue_as_new(self._params.model_copy(update=carried))
