"""`agent chat SESSION`: an interactive conversation with a `SessionWorkflow`.

Each line typed is sent with update-with-start (the session starts on the first message if it
does not exist); while the turn runs, it is followed with the same live view as `agent run`
(an inline turn through the session's `turn_status` query, a child turn as its own run), so
tool calls show up and approvals and questions are asked inline. `/end` ends the session;
`/quit` (or end of input, or Ctrl-C) leaves it running for later.
"""

from __future__ import annotations

import argparse
import asyncio

from durable_agents.cli.commands import Context
from durable_agents.cli.errors import OK
from durable_agents.cli.lines import LineReader
from durable_agents.cli.progress import Answerer, Console, ProgressView, Watcher
from durable_agents.client import RunHandle, SessionHandle
from durable_agents.client.outcome import RunOutcome
from durable_agents.contracts.session import RunningTurn, TurnResult

END_COMMANDS = ("/end",)
QUIT_COMMANDS = ("/quit", "/exit")


async def running_turn(
    session: SessionHandle, answered: asyncio.Future[TurnResult]
) -> RunningTurn | None:
    """The turn that answers our message once it runs (None if the answer came first)."""
    while not answered.done():
        status = await session.query_status()
        if status is not None and status.running is not None and status.queued == 0:
            return status.running
        await asyncio.wait({answered}, timeout=0.2)
    return None


async def turn_outcome(session_id: str, answered: asyncio.Future[TurnResult]) -> RunOutcome:
    """An inline turn has ended when its `send` update answers (the answer is printed then)."""
    await asyncio.wait({answered})
    return RunOutcome(session_id, "completed")


def turn_watcher(
    run: RunHandle,
    turn: RunningTurn,
    answered: asyncio.Future[TurnResult],
    view: ProgressView,
    answerer: Answerer | None,
) -> Watcher:
    """Follow the turn: a child turn as a run of its own, an inline turn through its session
    (`turn_status`) until the update answers. Approvals go to `workflow_id` either way."""
    if not turn.inline:
        return Watcher(run, view, answerer, from_start=True)
    ending = turn_outcome(turn.workflow_id, answered)
    return Watcher(run, view, answerer, status_query="turn_status", ending=ending)


async def chat(args: argparse.Namespace, ctx: Context) -> int:
    """The conversation loop (see the module docstring)."""
    agents = await ctx.agents()
    session = agents.session(args.session_id)
    console: Console = ctx.console()
    reader = LineReader()
    session_id: str = args.session_id
    console.line(f"session {session_id} · type a message; /end ends the session, /quit leaves")
    while True:
        console.prompt("you> ")
        line = await reader.readline()
        console.close_prompt(answered=line is not None)
        if line is None or line.strip() in QUIT_COMMANDS:
            console.line(f"left session {session_id}; it keeps its memory. Come back: "
                         f"{ctx.prefix} chat {session_id}")  # fmt: skip
            return OK
        text = line.strip()
        if not text:
            continue
        if text in END_COMMANDS:
            await session.end(by=args.by)
            console.line(f"session {session_id} ended")
            return OK
        update = await session.send_nowait(text, by=args.by)
        answered = asyncio.ensure_future(update.result())
        turn = await running_turn(session, answered)
        view = None
        if turn is not None:
            run = session.turn_run(turn)  # the session, or the turn's child run
            view = ProgressView(console, turn.workflow_id, ctx.prefix, session_turn=turn.turn)
            answerer = (
                None
                if args.no_input
                else Answerer(run, console, reader, by=args.by, prefix=ctx.prefix)
            )
            if await turn_watcher(run, turn, answered, view, answerer).follow() is None:
                console.line(f"detached; the session goes on: {ctx.prefix} chat {session_id}")
                return OK
        result = await answered
        if view is not None:
            view.steps(result.steps)  # those the turn took between two looks
        if result.error:
            console.line(f"agent> (the turn failed: {result.error})")
        else:
            console.line(f"agent> {result.answer}")
