"""Plain-text lines for people: a step, a turn, a pending request, a status, an outcome.

Pure functions (no I/O), so the live view, `status`, `pending` and `result` all print the
same things the same way.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from durable_agents.contracts.agent_result import AgentResult, ToolStep
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.review_display import (
    escape_text,
    hidden_warning,
    prompt_text,
    repeat_flag,
    show_call,
    terminal_lines,
)
from durable_agents.loop.summaries import shorten

MARKERS = {"ok": "✓", "error": "✗", "rejected": "⊘"}
ARGS_CHARS = 80
OBSERVATION_CHARS = 100
DIGEST_CHARS = 12
"""How much of a call's `args_digest` the printed `agent approve` command carries."""
ARGS_INDENT = "      "


def client_tool_lines(request: PendingRequest) -> list[str]:
    """`  ⇄ client tool get_location {"accuracy": "city"} waits for its result (call c1)`."""
    args = escape_text(shorten(json.dumps(request.args, ensure_ascii=False), 300))
    expires = f", expires {request.expires_at:%Y-%m-%d %H:%M:%S}Z" if request.expires_at else ""
    return [
        f"  ⇄ client tool {escape_text(request.tool)} {args} waits for its result "
        f"(call {escape_text(request.call_id)}{expires})"
    ]


def short_args(args: Mapping[str, Any] | None, raw: str = "", limit: int = ARGS_CHARS) -> str:
    """Tool arguments as compact one-line JSON (the raw text when they did not parse), with
    control and bidirectional characters escaped. For steps that ran, not for decisions: a
    pending call is shown by `pending_block`."""
    text = json.dumps(dict(args), ensure_ascii=False) if args is not None else raw
    return escape_text(shorten(text, limit))


def plural(count: int, noun: str) -> str:
    """`1 turn`, `2 turns`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def tokens(usage: TokenUsage) -> str:
    """`39 tokens`, or `~39 tokens` when some were estimated (the provider reported none)."""
    return f"{'~' if usage.estimated else ''}{usage.total_tokens} tokens"


def turn_line(
    iteration: int, max_iterations: int, usage: TokenUsage, *, session_turn: int | None = None
) -> str:
    """`turn 2/10 · 39 tokens so far` (a turn of a run is one model call); for a session's turn
    (`agent chat`: each message is a turn, whose model calls count from 1 again), `turn 3 ·
    model call 2/10 · 39 tokens so far`."""
    of = f"/{max_iterations}" if max_iterations else ""
    spent = f" · {tokens(usage)} so far" if usage.total_tokens else ""
    if session_turn is not None:
        return f"turn {session_turn} · model call {iteration}{of}{spent}"
    return f"turn {iteration}{of}{spent}"


def human_note(decision: HumanDecision | None) -> str:
    """` (approved by alice)`: who let a call through, for steps that waited for a person."""
    if decision is None:
        return ""
    who = f" by {decision.by}" if decision.by else ""
    if decision.outcome == "timed_out":
        return f" (timed out; {decision.timeout_action})"
    if decision.outcome == "rejected":
        return ""  # the observation already says "Rejected by ...: reason"
    return f" ({decision.outcome}{who})"


def step_line(step: ToolStep) -> str:
    """`  ✓ calculator {"expression": "17 * 25"} → 425`"""
    marker = MARKERS.get(step.status, "?")
    args = short_args(step.args, step.raw_arguments)
    observation = escape_text(shorten(step.observation, OBSERVATION_CHARS))
    return f"  {marker} {step.tool} {args} → {observation}{human_note(step.human)}"


def full_hint(prefix: str, workflow_id: str) -> str:
    """The command that shows every argument of the pending calls in full."""
    return f"{prefix} pending {shlex.quote(workflow_id)} --full"


def pending_block(
    request: PendingRequest, *, full: bool = False, hint: str | None = None
) -> list[str]:
    """A pending request for the person who decides on it: `  ? write_file {...} waits for
    approval (call w1)` when its arguments fit on the line; else the header and one argument a
    line, the short ones (path, recipient, amount) first and in full, then each long one's size
    and first and last lines (`full`: all of it), then `hint` when something was cut.
    Invisible and control characters are shown escaped (`loop/review_display.py`)."""
    if request.kind is RequestKind.CLIENT_TOOL:
        return client_tool_lines(request)
    if request.kind is RequestKind.QUESTION:
        question = escape_text(shorten(request.question or "", 200)) or short_args(request.args)
        return [f"  ? {escape_text(request.tool)} asks: {question} (call {request.call_id})"]
    call = show_call(request.tool, request.args, full=full)
    expires = f", expires {request.expires_at:%Y-%m-%d %H:%M:%S}Z" if request.expires_at else ""
    waits = f"waits for approval (call {escape_text(request.call_id)}{expires})"
    repeat = repeat_flag(request)
    repeated = [f"{ARGS_INDENT}{repeat}"] if repeat else []
    if call.compact is not None:
        warning = hidden_warning(call.hidden)
        lines = [f"  ? {call.tool} {call.compact} {waits}"]
        return lines + ([f"{ARGS_INDENT}{warning}"] if warning else []) + repeated
    lines = [f"  ? {call.tool} {waits}", *repeated, *terminal_lines(call, ARGS_INDENT)]
    if call.cut and hint:
        lines.append(f"{ARGS_INDENT}(cut for display; all of it: {hint})")
    return lines


def answer_text(result: AgentResult) -> str:
    """The answer to print: a typed answer as indented JSON, else the text."""
    if result.output is not None:
        return json.dumps(result.output, indent=2, ensure_ascii=False)
    return result.answer


def answer_commands(prefix: str, workflow_id: str, request: PendingRequest) -> list[str]:
    """The `agent` commands that answer `request` from another shell."""
    wid, call = shlex.quote(workflow_id), shlex.quote(request.call_id)
    if request.kind is RequestKind.CLIENT_TOOL:
        return [request.command]  # the `temporal` CLI's: `agent` has no command of its own
    if request.kind is RequestKind.QUESTION:
        return [f"{prefix} reply {wid} {call} 'your answer'"]
    return [
        f"{prefix} approve {wid} {call} --digest {request.args_digest[:DIGEST_CHARS]}",
        f"{prefix} reject {wid} {call} --reason 'why not'",
    ]


def can_show_more(request: PendingRequest) -> bool:
    """Whether the request's arguments are cut when shown (the prompt then offers `f`)."""
    return show_call(request.tool, request.args).cut


def approval_prompt(request: PendingRequest) -> str:
    """`approve write_file path: "a.txt", content: (12,345 chars, 301 lines)? [y]es/...: `:
    the short arguments in full, the long ones by their size (`f` shows them)."""
    call = show_call(request.tool, request.args)
    more = "[f]ull/" if call.cut else ""
    again = " AGAIN (it already ran and succeeded)" if request.repeat_of is not None else ""
    return f"approve {prompt_text(call)}{again}? [y]es/[n]o/[e]dit/{more}[s]kip: "


def full_lines(request: PendingRequest) -> list[str]:
    """What `f` at the prompt prints: every argument in full, and the digest the decision is
    bound to."""
    return [
        *pending_block(request, full=True),
        f"{ARGS_INDENT}args_digest: {request.args_digest} (the decision applies only to these)",
    ]


def decision_line(decision: HumanDecision) -> str:
    """`approved demo_call_1 by alice` / `rejected w2 by ops: not needed`."""
    who = f" by {decision.by}" if decision.by else ""
    reason = f": {decision.reason}" if decision.reason else ""
    comment = f" ({decision.comment})" if decision.comment else ""
    edited = (
        f" → runs with {short_args(decision.executed_args)}"
        if decision.outcome == "edited" and decision.executed_args is not None
        else ""
    )
    return f"{decision.outcome} {decision.call_id}{who}{reason}{comment}{edited}"


def result_summary(result: AgentResult) -> str:
    """`completed · 2 turns · 1 tool call · 57 tokens (37 prompt + 20 completion)`"""
    usage = result.usage
    parts = [
        result.stop_reason,
        plural(result.iterations, "turn"),
        plural(len(result.steps), "tool call"),
        f"{tokens(usage)} ({usage.prompt_tokens} prompt + "
        f"{usage.completion_tokens} completion{', estimated' if usage.estimated else ''})",
    ]
    if result.cost_usd is not None:
        parts.append(f"${result.cost_usd:.4f}")
    if result.model:
        parts.append(result.model)
    return " · ".join(parts)


def status_lines(
    workflow_id: str, execution_status: str, status: AgentStatus, prefix: str
) -> list[str]:
    """What `agent status` prints: where the run is, what it spent, what waits, recent steps."""
    lines = [f"{workflow_id} · {execution_status} · {status.phase}"]
    of = f"/{status.max_iterations}" if status.max_iterations else ""
    usage = status.usage
    lines.append(
        f"turn {status.iteration}{of} · model {status.model or 'worker default'} · "
        f"{usage.total_tokens} tokens ({usage.prompt_tokens} prompt + "
        f"{usage.completion_tokens} completion) · {plural(status.steps, 'tool call')}"
    )
    if status.stop_reason:
        lines.append(f"stop reason: {status.stop_reason}")
    if status.pending:
        lines.append("pending:")
        lines += pending_lines(status.pending, workflow_id, prefix)
    if status.recent_steps:
        lines.append("recent steps:")
        lines += [step_line(step) for step in status.recent_steps]
    return lines


def pending_lines(
    requests: Iterable[PendingRequest], workflow_id: str, prefix: str, *, full: bool = False
) -> list[str]:
    """Each pending request (`pending_block`), followed by the commands that answer it."""
    lines: list[str] = []
    hint = full_hint(prefix, workflow_id)
    for request in requests:
        lines += pending_block(request, full=full, hint=hint)
        lines += [f"      {command}" for command in answer_commands(prefix, workflow_id, request)]
    return lines
