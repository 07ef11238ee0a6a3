"""The session's current details in the Web UI (and `temporal workflow describe`): Markdown.

The Web UI renders current details as Markdown with typographic replacements (`--` becomes an
en dash, straight quotes curly ones), so the commands here and the user's own text go into code
spans: they render literally and paste into a shell. Invisible and control characters in the
user's text and a call's arguments are shown escaped (`loop/review_display.py`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.command_server import CommandServer
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.markdown import code_span
from durable_agents.loop.pasted_commands import aimed_command
from durable_agents.loop.review_display import escape_text, markdown_pending, markdown_text
from durable_agents.loop.summaries import plural, shorten

MESSAGE_PREVIEW_CHARS = 120


def send_command(session_id: str) -> str:
    """The Temporal CLI command that sends the session a message and waits for its answer."""
    return (
        f"temporal workflow update execute --workflow-id {shlex.quote(session_id)} --name send "
        f"--input {shlex.quote(json.dumps({'text': '...'}))}"
    )


def turn_details(
    turn: int, message: str, workflow_id: str | None, pending: Sequence[PendingRequest] = ()
) -> str:
    """A turn is running: what it answers, where it runs (its child run's id; None: inside the
    session's own history), and each of its pending requests with its arguments as the person
    deciding should see them and the command that answers it (`markdown_pending`)."""
    where = (
        f"running as {code_span(workflow_id)}"
        if workflow_id is not None
        else "running inside this session (its model and tool calls are in this history)"
    )
    preview = escape_text(shorten(message, MESSAGE_PREVIEW_CHARS))
    paragraphs = [f"turn {turn}: {code_span(preview)}", where]
    paragraphs += [markdown_pending(request) for request in pending]
    return "\n\n".join(paragraphs)


def idle_details(
    session_id: str,
    turns: int,
    usage: TokenUsage,
    queued: int,
    last_incomplete: str | None = None,
    server: CommandServer | None = None,
) -> str:
    """Between turns: the totals, why the last turn did not complete (if it did not), and how
    to send the next message (naming `server` when it is not the CLI's default)."""
    paragraphs = [f"{plural(turns, 'turn')} · {usage.total_tokens} tokens · {queued} queued"]
    if last_incomplete is not None:
        why = markdown_text(shorten(last_incomplete, 300))
        paragraphs.append(f"the last turn did not complete: {why}")
    send = aimed_command(send_command(session_id), server)
    paragraphs.append(f"send a message: {code_span(send)}")
    return "\n\n".join(paragraphs)
