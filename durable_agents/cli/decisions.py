"""`agent approve`, `agent reject`, `agent reply`: answer a run's calls that wait for a person
from another shell (a run's, or a session's running turn's, or a sub-agent's through its
parent), through `RunHandle` (`durable_agents.client`). A single call goes through the `decide`
update, so a refusal comes back as an error naming the call; `*` uses the signal of the same
name."""

from __future__ import annotations

import argparse
from typing import Literal

from durable_agents.cli.commands import Context, parse_json_object
from durable_agents.cli.errors import OK, CliError
from durable_agents.client import RunHandle, render
from durable_agents.client.run_handle import DIGEST
from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.request_kind import RequestKind

# -- deciding ----------------------------------------------------------------------------------


async def open_run(ctx: Context, workflow_id: str, doing: str) -> tuple[RunHandle, str]:
    """A run that is still going (and its task queue); `RunEnded` saying there is nothing to
    `doing` once it ended."""
    run = (await ctx.agents()).run(workflow_id)
    run.digest_name = "--digest"
    return run, await run.task_queue_if_running(doing)


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
    run, _ = await open_run(ctx, args.workflow_id, decision)
    if args.call == "*":
        return await _decide_all(run, ctx, args, decision)
    if decision == "approve":
        recorded = await run.approve(
            args.call, digest=digest, edit=edited, by=args.by, comment=args.comment
        )
    else:
        recorded = await run.reject(args.call, reason=args.reason, by=args.by)
    if ctx.json:
        ctx.emit(recorded.model_dump(mode="json"))
    else:
        ctx.say(render.decision_line(recorded))
    return OK


async def _decide_all(
    run: RunHandle, ctx: Context, args: argparse.Namespace, decision: Literal["approve", "reject"]
) -> int:
    """`CALL` = `*`: the signal takes every pending approval at once (the update takes one)."""
    note = {"comment": args.comment} if decision == "approve" else {"reason": args.reason}
    targets = await run.decide_all(decision, by=args.by, **note)
    if not targets:
        raise CliError(nothing_to_decide(run.id, await run.pending(), ctx.prefix))
    extra = {k: v for k, v in {"by": args.by, **note}.items() if v is not None}
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
    run, _ = await open_run(ctx, args.workflow_id, "reply to")
    requests = await run.pending()
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
        if target is not None and target.kind is not RequestKind.QUESTION:
            raise CliError(
                f"cannot reply to {call_id!r}: it waits for an approval; use "
                f"`{ctx.prefix} approve` or `{ctx.prefix} reject`"
            )
    await run.reply(call_id, args.text, by=args.by)
    payload = {"call_id": call_id, "text": args.text, **({"by": args.by} if args.by else {})}
    if ctx.json:
        ctx.emit({"signal": "reply", **payload})
    else:
        ctx.say(f"replied to {call_id}")
    return OK
