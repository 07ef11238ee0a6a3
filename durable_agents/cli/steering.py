"""`agent steer ID TEXT`: a message the running agent's model reads at its next call, without
restarting the run. ID may be a run or a session (which forwards it to its running turn)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError

from durable_agents.cli.commands import Context
from durable_agents.cli.connection import explain_rpc
from durable_agents.cli.decisions import open_run
from durable_agents.cli.errors import OK, CliError
from durable_agents.cli.progress import DECIDE_TIMEOUT_SECONDS, user_reason


async def steer(args: argparse.Namespace, ctx: Context) -> int:
    """Send the `steer` update; a refusal (empty text, an ended run, a session with no running
    turn) comes back as a one-line error."""
    if not args.text.strip():
        raise CliError("the steering text is empty")
    handle, task_queue = await open_run(ctx, args.workflow_id, "steer")
    payload = {"text": args.text, **({"by": args.by} if args.by else {})}
    try:
        queued: Any = await asyncio.wait_for(
            handle.execute_update("steer", payload), timeout=DECIDE_TIMEOUT_SECONDS
        )
    except WorkflowUpdateFailedError as error:
        raise CliError(f"cannot steer {args.workflow_id}: {user_reason(error)}") from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        raise CliError(
            f"no worker took the message within {DECIDE_TIMEOUT_SECONDS:g} s (is a worker "
            f"polling task queue {task_queue!r}?); it may still arrive when one does"
        ) from None
    except RPCError as error:
        raise explain_rpc(error, args.workflow_id, "cannot steer") from None
    if isinstance(queued, str):  # a session forwarded it to its running turn
        target, waiting = queued, None
    else:
        target, waiting = args.workflow_id, len(queued) if isinstance(queued, list) else None
    if ctx.json:
        ctx.emit({"workflow_id": target, "queued": waiting})
    else:
        more = f" ({waiting} waiting)" if waiting else ""
        ctx.say(f"steering message queued for the model's next call in {target}{more}")
    return OK
