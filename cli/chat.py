"""`agent chat SESSION`: an interactive conversation with a `SessionWorkflow`.

Each line typed is sent with update-with-start (the session starts on the first message if it
does not exist); while the turn runs, its child run is followed with the same live view as
`agent run`, so tool calls show up and approvals and questions are asked inline. `/end` ends
the session; `/quit` (or end of input, or Ctrl-C) leaves it running for later.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateStage,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError

from cli.connection import RunHandle, connect, explain_rpc
from cli.errors import OK, CliError
from cli.lines import LineReader
from cli.progress import Answerer, Console, ProgressView, Watcher, user_reason
from contracts.agent_result import AgentResult
from contracts.session import SessionStatus, TurnResult

SESSION_TYPE = "SessionWorkflow"
END_COMMANDS = ("/end",)
QUIT_COMMANDS = ("/quit", "/exit")


async def send(
    client: Client, session_id: str, task_queue: str, text: str, by: str | None
) -> WorkflowUpdateHandle[TurnResult]:
    """Send one message, starting the session if needed; returns once it is accepted."""
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        SESSION_TYPE,
        {},
        id=session_id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    try:
        return await client.start_update_with_start_workflow(
            "send",
            {"text": text, "by": by},
            start_workflow_operation=start,
            wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            result_type=TurnResult,
        )
    except WorkflowUpdateFailedError as error:
        raise CliError(f"message refused: {user_reason(error)}") from None
    except RPCError as error:
        raise explain_rpc(error, session_id, "cannot send the message") from None


async def running_turn(
    client: Client, session_id: str, answered: asyncio.Future[TurnResult]
) -> str | None:
    """The workflow id of the turn that answers our message once it runs (None if the answer
    came first)."""
    session = client.get_workflow_handle(session_id)
    while not answered.done():
        status = await session.query("status", result_type=SessionStatus)
        if status.running is not None and status.queued == 0:
            return status.running.workflow_id
        await asyncio.wait({answered}, timeout=0.2)
    return None


async def chat(args: argparse.Namespace, ctx: Any) -> int:
    """The conversation loop (see the module docstring)."""
    client = await connect(ctx.target)
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
            await client.get_workflow_handle(session_id).signal("end", {"by": args.by})
            console.line(f"session {session_id} ended")
            return OK
        update = await send(client, session_id, ctx.target.task_queue, text, args.by)
        answered = asyncio.ensure_future(update.result())
        turn_id = await running_turn(client, session_id, answered)
        if turn_id is not None:
            handle: RunHandle = client.get_workflow_handle(turn_id, result_type=AgentResult)
            view = ProgressView(console, turn_id, ctx.prefix)
            answerer = (
                None
                if args.no_input
                else Answerer(handle, console, reader, by=args.by, prefix=ctx.prefix)
            )
            if await Watcher(handle, view, answerer).follow() is None:
                console.line(f"detached; the session goes on: {ctx.prefix} chat {session_id}")
                return OK
        result = await answered
        if result.error:
            console.line(f"agent> (the turn failed: {result.error})")
        else:
            console.line(f"agent> {result.answer}")
