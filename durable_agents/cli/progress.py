"""The live view of a run: new turns, tool steps, tokens and pending requests as they happen,
with approvals and questions answered inline.

It reads the run's event stream (`runtime.event_stream`, through the stream's poll query: a
read leaves no trace in history) a few times a second while a second task waits for the
workflow result, so the view ends the moment the run does. `text_delta` events print the answer
as it is written (`cli/live_text.py`); any other event (a step started or finished, a request
for a person, the plan) makes it ask the `status` query once for the state it shows, and a
slow status poll backs the stream up. A run without a stream (started on a worker from before
it) is followed as before: the status query and the model call's heartbeats (`describe()`).
Answers go back through the run's `RunHandle` (`approve`, `reject`, `reply`, `tool_result`:
the `decide` update, the `reply` signal; a refusal comes back as its typed error from
`durable_agents.errors`). Ctrl-C only detaches: the run is durable and goes on without us.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TextIO, TypeVar

from temporalio.client import RPCTimeoutOrCancelledError

from durable_agents.cli import client_tools
from durable_agents.cli.lines import LineReader
from durable_agents.cli.live_text import (
    LiveCall,
    LiveText,
    Output,
    StreamText,
    model_calls_in_flight,
)
from durable_agents.client import render
from durable_agents.client.outcome import RunOutcome, await_outcome
from durable_agents.client.run_handle import RunHandle
from durable_agents.client.stream_watch import StatusDue, StreamWatch
from durable_agents.client.workflow_calls import DECIDE_TIMEOUT_SECONDS
from durable_agents.contracts.agent_result import ToolStep
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.events import AgentEvent, ModelCallStarted
from durable_agents.contracts.plan import PlanState
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.contracts.usage import TokenUsage
from durable_agents.errors import AgentError, DecisionRefused, NoWorker
from durable_agents.loop.plan import checklist

POLL_SECONDS = 0.3
T = TypeVar("T")


class Console:
    """Where progress lines go, aware of an open prompt: a line printed while a question is
    on screen goes above it and the question is shown again, so nothing gets garbled."""

    LIVE_MARGIN = "  ✎ "
    LIVE_INDENT = "    "

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._prompt: str | None = None
        self._live = False

    @property
    def live_open(self) -> bool:
        """A live text is being written on the current line."""
        return self._live

    def live(self, text: str) -> None:
        """Append `text` to the live text (the answer as it is written), which starts on a line
        of its own and goes on, indented, until the next line or `end_live`."""
        if not self._live:
            self.stream.write(self.LIVE_MARGIN)
            self._live = True
        self.stream.write(text.replace("\n", "\n" + self.LIVE_INDENT))
        self.stream.flush()

    def end_live(self) -> None:
        if self._live:
            self._live = False
            self.stream.write("\n")
            self.stream.flush()

    def line(self, text: str = "") -> None:
        self.end_live()
        if self._prompt is not None:
            self.stream.write("\n")
        self.stream.write(text + "\n")
        if self._prompt is not None:
            self.stream.write(self._prompt)
        self.stream.flush()

    def prompt(self, text: str) -> None:
        self.end_live()
        self.stream.write(text)
        self.stream.flush()
        self._prompt = text

    def close_prompt(self, *, answered: bool = False) -> None:
        """The open prompt got its answer (the terminal echoed it and ended the line) or was
        withdrawn (end the line here)."""
        if self._prompt is None:
            return
        self._prompt = None
        if not answered:
            self.stream.write("\n")
            self.stream.flush()


@dataclass
class Asking:
    """The request the answerer is asking about now, and the task that asks."""

    call_id: str
    task: asyncio.Task[None]


class Answerer:
    """Asks about pending requests on stdin and sends the answers to the run through its
    `RunHandle` (its checks, its typed errors)."""

    def __init__(
        self,
        run: RunHandle,
        console: Console,
        lines: LineReader,
        *,
        by: str | None,
        prefix: str,
    ) -> None:
        self.run = run
        self.console = console
        self.lines = lines
        self.by = by
        self.prefix = prefix
        self.sending = False
        """True while an answer is on its way: the request vanishing is then our own doing."""

    @property
    def closed(self) -> bool:
        return self.lines.closed

    async def ask(self, request: PendingRequest) -> None:
        """Ask until the request is answered, skipped, or stdin ends."""
        self.lines.discard_typed_ahead()
        if request.kind is RequestKind.CLIENT_TOOL:
            await client_tools.answer(self, request, self.console.line)
        elif request.kind is RequestKind.QUESTION:
            await self._ask_question(request)
        else:
            await self._ask_approval(request)

    async def _read(self, prompt: str) -> str | None:
        """One answer. On a terminal the prompt waits on screen; from a pipe or file it is
        printed with the answer once that arrives (a closed stdin leaves no dangling prompt)."""
        if not self.lines.interactive:
            line = await self.lines.readline()
            if line is not None:
                self.console.line(f"{prompt}{line}")
            return line
        self.console.prompt(prompt)
        answered = False
        try:
            line = await self.lines.readline()
            answered = line is not None
            return line
        finally:
            self.console.close_prompt(answered=answered)

    def _give_up(self, request: PendingRequest, why: str) -> None:
        if not self.lines.interactive:  # the commands were printed with the request
            self.console.line(f"  ({why}; answer with the commands above)")
            return
        self.console.line(f"  ({why}; answer from another shell:)")
        for command in render.answer_commands(self.prefix, self.run.id, request):
            self.console.line(f"      {command}")

    async def _ask_approval(self, request: PendingRequest) -> None:
        base: dict[str, Any] = {"call_id": request.call_id, "args_digest": request.args_digest}
        while True:
            answer = await self._read(render.approval_prompt(request))
            if answer is None:
                return self._give_up(request, "stdin is closed")
            choice = answer.strip().lower()
            payload: dict[str, Any]
            if choice in ("y", "yes"):
                payload = {**base, "decision": "approve"}
            elif choice in ("n", "no"):
                reason = await self._read("reason (optional): ")
                if reason is None:
                    return self._give_up(request, "stdin is closed")
                payload = {**base, "decision": "reject", "reason": reason.strip() or None}
            elif choice in ("e", "edit"):
                text = await self._read("arguments, as one line of JSON: ")
                if text is None:
                    return self._give_up(request, "stdin is closed")
                try:
                    args = json.loads(text)
                except json.JSONDecodeError as error:
                    self.console.line(f"  not JSON: {error}")
                    continue
                if not isinstance(args, dict):
                    self.console.line("  the arguments must be a JSON object")
                    continue
                payload = {**base, "decision": "approve", "args": args}
            elif choice in ("f", "full", "show"):
                for line in render.full_lines(request):
                    self.console.line(line)
                continue
            elif choice in ("s", "skip"):
                return self._give_up(request, "skipped")
            else:
                more = ", f (show all the args)" if render.can_show_more(request) else ""
                self.console.line(
                    f"  answer y (approve), n (reject), e (edit the args){more} or s (skip)"
                )
                continue
            if await self._decide(payload):
                return

    async def _send(self, payload: dict[str, Any]) -> HumanDecision:
        """`payload` (call, decision, digest, edited args, reason) through `RunHandle`."""
        call_id = payload["call_id"]
        if payload["decision"] == "reject":
            return await self.run.reject(call_id, reason=payload.get("reason"), by=self.by)
        digest, edit = payload.get("args_digest"), payload.get("args")
        return await self.run.approve(call_id, digest=digest, edit=edit, by=self.by)

    async def _decide(self, payload: dict[str, Any]) -> bool:
        """Send the decision; True when asking is over (sent, or the run has ended)."""
        self.sending = True
        try:
            decision = await self._send(payload)
        except DecisionRefused as error:
            self.console.line(f"  refused: {error.reason}")
            return False
        except NoWorker as error:
            if not error.update:
                self.console.line(f"  {error}")
                return True
            self.console.line(
                f"  no worker took the decision within {DECIDE_TIMEOUT_SECONDS:g} s; "
                "it may still apply when one does"
            )
            return True
        except AgentError as error:
            self.console.line(f"  {error}")
            return True
        finally:
            self.sending = False
        self.console.line(f"  → {render.decision_line(decision)}")
        return True

    async def _ask_question(self, request: PendingRequest) -> None:
        text = await self._read("your reply (empty line: skip): ")
        if text is None:
            return self._give_up(request, "stdin is closed")
        if not text.strip():
            return self._give_up(request, "skipped")
        try:
            await self.run.reply(request.call_id, text, by=self.by)
        except AgentError as error:
            self.console.line(f"  {error}")
            return
        self.console.line(f"  → replied to {request.call_id}")


class ProgressView:
    """Prints each turn, step and pending request once, however often the status is polled."""

    def __init__(
        self, console: Console, workflow_id: str, prefix: str, *, session_turn: int | None = None
    ) -> None:
        """`session_turn`: the view follows this turn of a session (`agent chat`), whose model
        calls are counted from 1 again; its headers name the session's turn and the call."""
        self.console = console
        self.workflow_id = workflow_id
        self.prefix = prefix
        self.session_turn = session_turn
        self.turn = 0
        self._shown: set[tuple[int, str]] = set()
        self._announced: set[str] = set()
        self._live = LiveText()
        self._stream_text = StreamText()
        self._checklist: str | None = None

    def steps(self, steps: list[ToolStep]) -> None:
        for step in steps:
            key = (step.iteration, step.call_id)
            if key in self._shown:
                continue
            self._shown.add(key)
            if step.iteration > self.turn:
                self._header(step.iteration)
            self.console.line(render.step_line(step))

    def plan(self, plan: PlanState | None) -> None:
        """Plan-and-execute: the checklist again whenever a step's status changes (a live
        checklist: ✓ done, → running, ✗ failed, · pending)."""
        if plan is None:
            return
        shown = checklist(plan)
        if shown == self._checklist:
            return
        self._checklist = shown
        revision = f" (revision {len(plan.revisions)})" if len(plan.revisions) > 1 else ""
        self.console.line(f"plan{revision}:")
        for line in shown.splitlines():
            self.console.line(f"  {line}")

    def status(self, status: AgentStatus, *, with_commands: bool) -> list[PendingRequest]:
        """Show what is new in `status`; returns the pending requests not seen before."""
        self.plan(status.plan)
        self.steps(status.recent_steps)
        if status.iteration > self.turn:
            self._header(status.iteration, status)
        fresh = [p for p in status.pending if p.call_id not in self._announced]
        for request in fresh:
            self._announced.add(request.call_id)
            hint = render.full_hint(self.prefix, self.workflow_id)
            for line in render.pending_block(request, hint=hint):
                self.console.line(line)
            if with_commands:
                for command in render.answer_commands(self.prefix, self.workflow_id, request):
                    self.console.line(f"      {command}")
        return fresh

    def live(self, calls: list[LiveCall]) -> None:
        """The text the model call in flight has written since the last look; with no call in
        flight, the live text ends."""
        if not calls:
            self.console.end_live()
            return
        self._print_live(self._live.update(calls[-1]))

    def new_turn_in(self, events: list[AgentEvent]) -> bool:
        """Whether `events` start a turn this view has not shown yet."""
        return any(self._turn_started_by(event) is not None for event in events)

    def stream(self, events: list[AgentEvent], status: AgentStatus | None = None) -> None:
        """The answer as the event stream carries it, piece by piece. With the `status` read
        after these events, a turn they start is shown where it starts: after the text and the
        tool steps of the turn before, so the end of one turn's text, which can come in the
        same look as the next turn's start, stays under its own turn."""
        for event in events:
            turn = self._turn_started_by(event)
            if turn is not None and status is not None:
                self._enter_turn(turn, status)
            self._print_live(self._stream_text.update(event))

    def _turn_started_by(self, event: AgentEvent) -> int | None:
        """The turn (loop iteration) `event` starts, when it starts one not shown yet."""
        if isinstance(event, ModelCallStarted) and event.purpose == "turn":
            return event.model_call if event.model_call > self.turn else None
        return None

    def _enter_turn(self, turn: int, status: AgentStatus) -> None:
        """The steps of the turns before `turn` (they ran before it started), then its header:
        with the limit and the tokens spent when it is the turn `status` is at."""
        self.steps([step for step in status.recent_steps if step.iteration < turn])
        if turn > self.turn:
            self._header(turn, status if turn == status.iteration else None)

    def _header(self, turn: int, status: AgentStatus | None = None) -> None:
        """The line that starts `turn` (a model call of the run): `turn 2/10 · 39 tokens so far`
        when `status` is at that turn, else `turn 2`; in a session, `turn 3 · model call 2/10 ·
        ...` (the session's turn, then the call within it)."""
        self.turn = turn
        if status is None:
            line = render.turn_line(turn, 0, TokenUsage(), session_turn=self.session_turn)
        else:
            line = render.turn_line(
                turn, status.max_iterations, status.usage, session_turn=self.session_turn
            )
        self.console.line(line)

    def _print_live(self, outputs: list[Output]) -> None:
        for output in outputs:
            if output.kind == "text":
                self.console.live(output.value)
            elif output.kind == "end":
                self.console.end_live()
            else:
                self.console.line(output.value)

    def outcome(self, outcome: RunOutcome, *, show_answer: bool) -> None:
        """The steps not seen yet, how the run ended and (unless JSON goes to stdout) the
        answer."""
        result = outcome.result
        if result is None:
            self.console.line(f"{outcome.ending} · {outcome.error_type}: {outcome.message}")
            return
        self.plan(result.plan)
        self.steps(result.steps)
        self.console.line(f"done · {render.result_summary(result)}")
        if show_answer:
            self.console.line()
            self.console.line(render.answer_text(result))


def _install_sigint(callback: Callable[[], None]) -> bool:
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, callback)
        return True
    return False


class Watcher:
    """Follows one run to its end (or until Ctrl-C), printing progress and asking about
    pending requests when an `Answerer` is given."""

    def __init__(
        self,
        run: RunHandle,
        view: ProgressView,
        answerer: Answerer | None,
        *,
        poll_seconds: float = POLL_SECONDS,
        live_text: bool = True,
        status_query: str = "status",
        ending: Awaitable[RunOutcome] | None = None,
        from_start: bool = False,
    ) -> None:
        """`status_query` and `ending` follow something other than a run of its own: a
        session's inline turn is followed by the session's `turn_status` query until the turn's
        `send` update answers. `from_start`: read the stream from its first event (a run
        started here), else from its end when the view starts."""
        self.run = run
        self.view = view
        self.answerer = answerer
        self.poll_seconds = poll_seconds
        self.live_text = live_text
        self._asking: Asking | None = None
        self._asked: set[str] = set()
        self._query_trouble = False
        self._detached = asyncio.Event()
        self._ending: asyncio.Future[RunOutcome] | None = None
        self._status_query = status_query
        self._end = ending
        self._watch = StreamWatch(run.workflow, from_start=from_start)
        self._status_due = StatusDue()

    async def follow(self) -> RunOutcome | None:
        """The run's outcome, or None when the user detached with Ctrl-C."""
        installed = _install_sigint(self._detached.set)
        ending = asyncio.ensure_future(self._end or await_outcome(self.run.workflow))
        self._ending = ending
        detach = asyncio.create_task(self._detached.wait())
        try:
            while not ending.done() and not self._detached.is_set():
                if self._watch.streamed is not False:
                    await self._from_stream()
                else:
                    await self._from_polls()
                await asyncio.wait(
                    {ending, detach}, timeout=self.poll_seconds, return_when=asyncio.FIRST_COMPLETED
                )
            if not ending.done():
                return None
            return ending.result()
        finally:
            if installed:
                asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
            asking = self._asking.task if self._asking else None
            if asking is not None and self.answerer is not None and self.answerer.sending:
                # A decision on its way when the run ended (it may be what ended it): let it
                # finish and say how it went, rather than cut it off.
                await asyncio.wait({asking}, timeout=DECIDE_TIMEOUT_SECONDS)
            for task in (asking, ending, detach):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task

    async def _from_stream(self) -> None:
        """One look at the stream: ask for the status when something besides the text
        happened (or the backstop is due), then print the new text in order, each turn's header
        where the turn starts, and then what the status shows (steps, pending requests). The
        status is read after the events, so it may be turns ahead of the text before it."""
        events = await self._until_stop(self._watch.news())
        if events is None:
            return
        status = None
        if self._status_due.now(events, new_turn=self.view.new_turn_in(events)):
            status = await self._until_stop(self._status())
        if self.live_text:
            self.view.stream(events, status)
        if status is not None:
            self._show(status)

    async def _from_polls(self) -> None:
        """A run without a stream: its status, and its model call's heartbeats."""
        status = await self._until_stop(self._status())
        if status is not None:
            self._show(status)
        if self.live_text and (
            self.view.console.live_open or status is None or status.phase == "thinking"
        ):
            calls = await self._until_stop(self._model_calls())
            if calls is not None:
                self.view.live(calls)

    async def _until_stop(self, work: Awaitable[T]) -> T | None:
        """`work`'s value, or None if the run ends or the user detaches first."""
        task = asyncio.ensure_future(work)
        assert self._ending is not None
        stoppers: set[asyncio.Future[Any]] = {task, self._ending}
        waiter = asyncio.ensure_future(self._detached.wait())
        stoppers.add(waiter)
        try:
            await asyncio.wait(stoppers, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return None

    async def _status(self) -> AgentStatus | None:
        try:
            status = await self.run.query_state(self._status_query, AgentStatus)
        except AgentError as error:
            if not self._query_trouble:
                self._query_trouble = True
                self.view.console.line(
                    f"  (the status query got no answer: {error.message}; "
                    "is a worker running? still watching)"
                )
            return None
        self._query_trouble = False
        return status

    async def _model_calls(self) -> list[LiveCall] | None:
        """The model calls in flight with their progress; None when describe fails (the status
        query already says when the server cannot be reached)."""
        try:
            return await model_calls_in_flight(self.run)
        except (AgentError, RPCTimeoutOrCancelledError):
            return None

    def _show(self, status: AgentStatus) -> None:
        answerer = self.answerer
        can_ask = answerer is not None and not answerer.closed
        with_commands = not can_ask or not (answerer is not None and answerer.lines.interactive)
        self.view.status(status, with_commands=with_commands)
        pending_ids = {p.call_id for p in status.pending}
        asking = self._asking
        if asking is not None and asking.task.done() and not asking.task.cancelled():
            error = asking.task.exception()
            if error is not None:
                self.view.console.line(f"  (could not ask about {asking.call_id}: {error})")
        if asking is not None and not asking.task.done():
            if asking.call_id in pending_ids or (answerer is not None and answerer.sending):
                return
            asking.task.cancel()
            self.view.console.close_prompt()
            self.view.console.line(f"  ({asking.call_id} was answered elsewhere)")
        self._asking = None
        if answerer is None or answerer.closed:
            return
        for request in status.pending:
            if request.call_id not in self._asked:
                self._asked.add(request.call_id)
                task = asyncio.create_task(answerer.ask(request))
                self._asking = Asking(request.call_id, task)
                return
