"""`agent approve`, `agent reject`, `agent reply`: answer a run's calls that wait for a person
from another shell (a run's, or a session's running turn's, or a sub-agent's through its
parent). A single call goes through the `decide` update, so a refusal comes back as an error
naming the call; `*` uses the signal of the same name."""

from __future__ import annotations

import argparse
import re
from typing import Any, Literal

from temporalio.service import RPCError

from durable_agents.cli.commands import Context, parse_json_object
from durable_agents.cli.errors import OK, CliError
from durable_agents.client import render
from durable_agents.client.connection import WorkflowRun as RunHandle
from durable_agents.client.connection import (
    connect,
    describe,
    explain_rpc,
    is_running,
    status_name,
)
from durable_agents.client.workflow_calls import answer_call, full_digest, pending_requests
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.request_kind import RequestKind

DIGEST = re.compile(r"[0-9a-f]{8,64}")
"""`--digest`: the start of a call's `args_digest` (sha256, 64 hex digits)."""

# -- deciding ----------------------------------------------------------------------------------


async def open_run(ctx: Context, workflow_id: str, doing: str) -> tuple[RunHandle, str]:
    """The handle of a run that is still going (and its task queue), or a clear error."""
    client = await connect(ctx.target)
    handle, description = await describe(client, workflow_id)
    if not is_running(description):
        raise CliError(
            f"run {workflow_id!r} has already ended ({status_name(description).lower()}); "
            f"there is nothing to {doing}"
        )
    return handle, description.task_queue


async def decide(
    args: argparse.Namespace, ctx: Context, decision: Literal["approve", "reject"]
) -> int:
    """Approve or reject one call with the `decide` update (a refusal comes back as an error
    naming the call), or every pending approval (`*`) with the signal of the same name."""
    edited = parse_json_object(args.args, "--args") if getattr(args, "args", None) else None
    if edited is not None and args.call == "*":
        raise CliError("--args edits one call: name its call id instead of '*'")
    digest = getattr(args, "digest", None)
    if digest is not None:
        digest = digest.strip().lower()
        if not DIGEST.fullmatch(digest):
            raise CliError("--digest takes the hex args_digest `pending` shows (8 to 64 digits)")
        if args.call == "*":
            raise CliError("--digest names one call's arguments: name its call id, not '*'")
    handle, task_queue = await open_run(ctx, args.workflow_id, decision)
    extra: dict[str, Any] = {"by": args.by}
    if decision == "approve":
        extra["comment"] = args.comment
    else:
        extra["reason"] = args.reason
    extra = {k: v for k, v in extra.items() if v is not None}
    if args.call == "*":
        return await _decide_all(handle, task_queue, ctx, decision, extra)
    payload: dict[str, Any] = {"call_id": args.call, "decision": decision, **extra}
    if edited is not None:
        payload["args"] = edited
    if digest is not None:
        payload["args_digest"] = await full_digest(handle, task_queue, args.call, digest)
    recorded = await answer_call(handle, task_queue, payload, verb=decision)
    if ctx.json:
        ctx.emit(recorded.model_dump(mode="json"))
    else:
        ctx.say(render.decision_line(recorded))
    return OK


async def _decide_all(
    handle: RunHandle,
    task_queue: str,
    ctx: Context,
    decision: Literal["approve", "reject"],
    extra: dict[str, Any],
) -> int:
    """`CALL` = `*`: the signal takes every pending approval at once (the update takes one)."""
    requests = await pending_requests(handle, task_queue)
    targets = [r for r in requests if r.kind is RequestKind.APPROVAL]
    if not targets:
        raise CliError(nothing_to_decide(handle.id, requests, ctx.prefix))
    try:
        await handle.signal(decision, {"call_id": "*", **extra})
    except RPCError as error:
        raise explain_rpc(error, handle.id, f"cannot {decision} '*'") from None
    ids = [r.call_id for r in targets]
    if ctx.json:
        ctx.emit({"signal": decision, "call_ids": ids, **extra})
    else:
        done = "approved" if decision == "approve" else "rejected"
        ctx.say(f"{done} {len(ids)} pending call{'s' if len(ids) != 1 else ''}: {', '.join(ids)}")
    return OK


WAITING_KINDS = {RequestKind.QUESTION: "a question", RequestKind.CLIENT_TOOL: "a client tool call"}
"""What a pending request that is not an approval is called when `*` finds no approval."""


def nothing_to_decide(workflow_id: str, requests: list[PendingRequest], prefix: str) -> str:
    """Why `approve`/`reject '*'` did nothing: no approval is pending, and what waits instead
    (a question, a client tool call) with the command that answers it."""
    message = f"no approval is pending in {workflow_id}"
    waiting = [
        f"{WAITING_KINDS.get(r.kind, r.kind.value)} waits (call {r.call_id}); answer it with "
        f"{render.answer_commands(prefix, workflow_id, r)[0]}"
        for r in requests
        if r.kind is not RequestKind.APPROVAL
    ]
    return f"{message}, but {'; '.join(waiting)}" if waiting else message


async def approve(args: argparse.Namespace, ctx: Context) -> int:
    """`agent approve ID CALL`: let a call run, perhaps with edited `--args`."""
    return await decide(args, ctx, "approve")


async def reject(args: argparse.Namespace, ctx: Context) -> int:
    """`agent reject ID CALL --reason TEXT`: the call does not run; the model reads why."""
    return await decide(args, ctx, "reject")


async def reply(args: argparse.Namespace, ctx: Context) -> int:
    """`agent reply ID CALL TEXT`: answer an `ask_user` question (`*`: the only open one).

    Replies have only a signal, which the workflow ignores when it cannot apply, so the
    pending questions are checked first to give a clear error instead of silence."""
    handle, task_queue = await open_run(ctx, args.workflow_id, "reply to")
    requests = await pending_requests(handle, task_queue)
    questions = [r for r in requests if r.kind is RequestKind.QUESTION]
    if args.call == "*":
        if not questions:
            raise CliError(f"no question is pending in {args.workflow_id}")
        if len(questions) > 1:
            ids = ", ".join(q.call_id for q in questions)
            raise CliError(f"{len(questions)} questions are open ({ids}): name one")
        call_id = questions[0].call_id
    else:
        call_id = args.call
        target = next((r for r in requests if r.call_id == call_id), None)
        if target is None:
            open_ids = ", ".join(r.call_id for r in requests) or "none"
            raise CliError(
                f"cannot reply to {call_id!r} in {args.workflow_id}: no pending question "
                f"{call_id!r} (unknown or already answered); pending: {open_ids}"
            )
        if target.kind is not RequestKind.QUESTION:
            raise CliError(
                f"cannot reply to {call_id!r}: it waits for an approval; use "
                f"`{ctx.prefix} approve` or `{ctx.prefix} reject`"
            )
    payload: dict[str, Any] = {"call_id": call_id, "text": args.text}
    if args.by:
        payload["by"] = args.by
    try:
        await handle.signal("reply", payload)
    except RPCError as error:
        raise explain_rpc(error, args.workflow_id, f"cannot reply to {call_id!r}") from None
    if ctx.json:
        ctx.emit({"signal": "reply", **payload})
    else:
        ctx.say(f"replied to {call_id}")
    return OK
