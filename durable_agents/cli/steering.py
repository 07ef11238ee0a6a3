"""`agent steer ID TEXT`: a message the running agent's model reads at its next call, without
restarting the run. ID may be a run or a session (which forwards it to its running turn)."""

from __future__ import annotations

import argparse

from durable_agents.cli.commands import Context
from durable_agents.cli.decisions import open_run
from durable_agents.cli.errors import OK, CliError


async def steer(args: argparse.Namespace, ctx: Context) -> int:
    """Send the `steer` update; a refusal (empty text, an ended run, a session with no running
    turn) comes back as a one-line error."""
    if not args.text.strip():
        raise CliError("the steering text is empty")
    run, _ = await open_run(ctx, args.workflow_id, "steer")
    steered = await run.steer(args.text, by=args.by)
    target, waiting = steered.workflow_id, steered.queued
    if ctx.json:
        ctx.emit({"workflow_id": target, "queued": waiting})
    else:
        more = f" ({waiting} waiting)" if waiting else ""
        ctx.say(f"steering message queued for the model's next call in {target}{more}")
    return OK
