"""The queries, updates and signals of `AgentWorkflow` and `SessionWorkflow`, each with what its
failures mean as typed errors (`durable_agents.errors`).

`RunHandle` and `SessionHandle` are built on these; the `agent` CLI's live view uses a few of
them directly (it sends what a person typed as soon as it is typed). A refused answer's reason
is the workflow's own words (`DecisionRefused`'s message): `refusal` tells from it and from the
run's event stream whether the call never waited, was decided already, or had other arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from typing import Any, Final, TypeVar

from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WithStartWorkflowOperation,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from durable_agents.client import render
from durable_agents.client.connection import QUERY_TIMEOUT, WorkflowRun, explain_rpc
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.client_tools import CLIENT_TOOL_RESULT_UPDATE
from durable_agents.contracts.session import TurnResult
from durable_agents.errors import (
    AlreadyDecided,
    CallNotFound,
    DecisionRefused,
    DigestMismatch,
    MessageRefused,
    NoWorker,
    StarterCannotApprove,
)
from durable_agents.loop.approvals import TWO_PERSON_RULE
from durable_agents.loop.summaries import first_line
from durable_agents.runtime.event_stream import read_handle_events, read_range

QueryT = TypeVar("QueryT")
WORKFLOW_TYPE: Final = "AgentWorkflow"
SESSION_TYPE: Final = "SessionWorkflow"
CLOSED_QUERY_TIMEOUT_SECONDS: Final = 3.0
DECIDE_TIMEOUT_SECONDS: Final = 15.0
"""How long a decision may wait for a worker to accept it before the client gives up waiting."""
SEND_TIMEOUT_SECONDS: Final = 15.0
"""The same for a client tool's result (the `tool_result` update)."""
FULL_DIGEST_CHARS: Final = 64
SUMMARY_CHARS: Final = 100
DETAILS_PROMPT_CHARS: Final = 2000
DECIDED_TYPES: Final = frozenset({"approval_decided", "question_answered"})
"""The events that say a call was decided by a person."""
CLIENT_ASKED_TYPES: Final = frozenset({"client_tool_requested"})
"""The event that says a client tool call waited (no longer pending: it was answered, or it
timed out)."""


def user_reason(error: BaseException) -> str:
    """The message of a refused update (the workflow's `DecisionRefused` text)."""
    cause = error.cause if isinstance(error, WorkflowUpdateFailedError) else error
    if isinstance(cause, ApplicationError):
        return cause.message
    if isinstance(cause, RPCError):
        return cause.message
    return str(cause)


# -- queries -----------------------------------------------------------------------------------


async def query_status(handle: WorkflowHandle[Any, Any], timeout: float) -> AgentStatus | None:
    """The `status` query's answer, or None when no worker answers in time."""
    return await answered_query(handle, "status", AgentStatus, timeout)


async def answered_query(
    handle: WorkflowHandle[Any, Any], query: str, result_type: type[QueryT], timeout: float
) -> QueryT | None:
    """The answer of `query` (decoded as `result_type`), or None when no worker answers in
    `timeout` seconds (or the workflow cannot answer it now)."""
    try:
        return await asyncio.wait_for(
            handle.query(query, result_type=result_type, rpc_timeout=QUERY_TIMEOUT),
            timeout=timeout,
        )
    except (RPCError, WorkflowQueryFailedError, RPCTimeoutOrCancelledError, TimeoutError):
        return None


def status_from_result(result: AgentResult) -> AgentStatus:
    """A completed run's status rebuilt from its result (when no worker answers queries)."""
    return AgentStatus(
        phase="done",
        iteration=result.iterations,
        model=result.model,
        usage=result.usage,
        steps=len(result.steps),
        recent_steps=result.steps[-5:],
        stop_reason=result.stop_reason,
    )


def no_worker(what: str, workflow_id: str, task_queue: str, detail: str = "") -> NoWorker:
    return NoWorker(
        f"no worker answered the {what}{detail}; is a worker polling task queue {task_queue!r}?",
        workflow_id=workflow_id,
        task_queue=task_queue,
    )


async def pending_requests(
    handle: WorkflowHandle[Any, Any], task_queue: str
) -> list[PendingRequest]:
    """The `pending_approvals` query, or `NoWorker` when no worker answers it."""
    try:
        requests: list[PendingRequest] = await handle.query(
            "pending_approvals", result_type=list[PendingRequest], rpc_timeout=QUERY_TIMEOUT
        )
    except (WorkflowQueryFailedError, RPCTimeoutOrCancelledError) as error:
        raise no_worker("pending_approvals query", handle.id, task_queue, f" ({error})") from None
    except RPCError as error:
        if error.status.name == "DEADLINE_EXCEEDED":
            seconds = f" within {QUERY_TIMEOUT.total_seconds():g} s"
            raise no_worker("pending_approvals query", handle.id, task_queue, seconds) from None
        raise explain_rpc(error, handle.id, "cannot list pending requests") from None
    return requests


# -- answers -----------------------------------------------------------------------------------


async def send_decision(handle: WorkflowRun, payload: dict[str, Any]) -> HumanDecision:
    """Run the `decide` update: the recorded decision, or an exception saying why not."""
    return await asyncio.wait_for(
        handle.execute_update("decide", payload, result_type=HumanDecision),
        timeout=DECIDE_TIMEOUT_SECONDS,
    )


async def send_result(handle: WorkflowRun, payload: dict[str, Any]) -> HumanDecision:
    """Run the `tool_result` update: the recorded answer, or an exception saying why not."""
    return await asyncio.wait_for(
        handle.execute_update(CLIENT_TOOL_RESULT_UPDATE, payload, result_type=HumanDecision),
        timeout=SEND_TIMEOUT_SECONDS,
    )


async def was_answered(
    handle: WorkflowHandle[Any, Any], call_id: str, answered_types: frozenset[str] = DECIDED_TYPES
) -> bool:
    """Whether `call_id` was answered in this run: one of `answered_types` for it in its event
    stream, or a step of it that a person (or the client) answered in the steps its `status`
    query shows."""
    with contextlib.suppress(Exception):
        async for event in read_range(lambda after: read_handle_events(handle, after=after)):
            if event.type in answered_types and event.call_id == call_id:
                return True
    try:
        status = await query_status(handle, QUERY_TIMEOUT.total_seconds())
    except Exception:  # a session's `status` is not a run's: its stream said it all
        return False
    client = answered_types is CLIENT_ASKED_TYPES
    return status is not None and any(
        step.call_id == call_id and (client or step.human is not None)
        for step in status.recent_steps
    )


async def refusal(
    handle: WorkflowHandle[Any, Any],
    call_id: str,
    reason: str,
    message: str,
    answered_types: frozenset[str] = DECIDED_TYPES,
) -> DecisionRefused:
    """The typed error of an answer the workflow refused with `reason` (`message`: the line to
    show): `AlreadyDecided` for a call answered before, `CallNotFound` for one that never
    waited, `DigestMismatch` for other arguments than the digest names, else
    `DecisionRefused` (an approval of a question, edited arguments the tool refuses, a client
    tool's result that breaks its `result_schema`)."""
    facts: dict[str, Any] = {"call_id": call_id, "reason": reason, "workflow_id": handle.id}
    if reason.startswith(("no pending call", "no turn is running")):
        if await was_answered(handle, call_id, answered_types):
            return AlreadyDecided(message, **facts)
        return CallNotFound(message, **facts)
    if reason.startswith(TWO_PERSON_RULE):
        return StarterCannotApprove(message, **facts)
    if "args_digest" in reason:
        return DigestMismatch(message, **facts)
    return DecisionRefused(message, **facts)


def not_taken(workflow_id: str, task_queue: str, what: str, seconds: float, then: str) -> NoWorker:
    """An update no worker took in time: it may still `then` (apply, arrive) when one does."""
    return NoWorker(
        f"no worker took {what} within {seconds:g} s (is a worker polling task queue "
        f"{task_queue!r}?); it may still {then} when one does",
        workflow_id=workflow_id,
        task_queue=task_queue,
        update=True,
    )


async def answer_call(
    handle: WorkflowRun,
    task_queue: str,
    payload: dict[str, Any],
    *,
    verb: str,
    update: str = "decide",
) -> HumanDecision:
    """Send one answer (`decide`, `tool_result`; `payload` names the call): the recorded
    answer, or the typed error of its refusal (nothing entered history then) or of a worker
    that did not take it in time. `verb` says what was tried (`approve`, `reject`, `answer`)."""
    call = payload["call_id"]
    client_tool = update == CLIENT_TOOL_RESULT_UPDATE
    try:
        if client_tool:
            return await send_result(handle, payload)
        return await send_decision(handle, payload)
    except WorkflowUpdateFailedError as error:
        reason = user_reason(error)
        answered = CLIENT_ASKED_TYPES if client_tool else DECIDED_TYPES
        message = f"cannot {verb} {call!r} in {handle.id}: {reason}"
        raise await refusal(handle, call, reason, message, answered) from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        seconds = SEND_TIMEOUT_SECONDS if client_tool else DECIDE_TIMEOUT_SECONDS
        what = f"the {'result' if client_tool else 'decision'} on {call!r}"
        raise not_taken(handle.id, task_queue, what, seconds, "apply") from None
    except RPCError as error:
        raise explain_rpc(error, handle.id, f"cannot {verb} {call!r}") from None


async def full_digest(
    handle: WorkflowHandle[Any, Any],
    task_queue: str,
    call_id: str,
    digest: str,
    field: str = "--digest",
) -> str:
    """The whole `args_digest` of pending call `call_id` when it starts with `digest` (what the
    person saw); the workflow then checks it again as it decides, so nothing in between can
    change the arguments approved. `field` is what the interface calls the digest in a refusal
    (`--digest` in the CLI, `args_digest` over HTTP and MCP). Raises `DigestMismatch`."""
    if len(digest) == FULL_DIGEST_CHARS:
        return digest
    requests = await pending_requests(handle, task_queue)
    request = next((r for r in requests if r.call_id == call_id), None)
    if request is None:
        return digest  # the workflow refuses it, naming the call ids that are pending
    if not request.args_digest.startswith(digest):
        raise DigestMismatch(
            f"cannot approve {call_id!r} in {handle.id}: its arguments are not the ones shown "
            f"with {field} {digest} (their args_digest is {request.args_digest[:12]}); look "
            "again with `pending`",
            call_id=call_id,
            workflow_id=handle.id,
        )
    return request.args_digest


async def steer_run(
    handle: WorkflowHandle[Any, Any], task_queue: str, payload: dict[str, Any]
) -> Any:
    """The `steer` update: the queue of messages waiting for the model (a run), or the workflow
    id of the turn a session forwarded it to."""
    try:
        return await asyncio.wait_for(
            handle.execute_update("steer", payload), timeout=DECIDE_TIMEOUT_SECONDS
        )
    except WorkflowUpdateFailedError as error:
        raise MessageRefused(
            f"cannot steer {handle.id}: {user_reason(error)}", workflow_id=handle.id
        ) from None
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        raise not_taken(
            handle.id, task_queue, "the message", DECIDE_TIMEOUT_SECONDS, "arrive"
        ) from None
    except RPCError as error:
        raise explain_rpc(error, handle.id, "cannot steer") from None


async def signal(handle: WorkflowHandle[Any, Any], name: str, payload: Any, doing: str) -> None:
    """Send signal `name`; an RPC failure as its typed error."""
    try:
        await handle.signal(name, payload)
    except RPCError as error:
        raise explain_rpc(error, handle.id, doing) from None


# -- starting ----------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return render.shorten(text, 200).replace("|", "\\|")


def run_details(payload: Mapping[str, Any], by: str | None, via: str = "`agent run`") -> str:
    """The run's static details for the Web UI: the prompt and the settings, in Markdown;
    `via` says what started it."""
    prompt = render.shorten(payload["prompt"], DETAILS_PROMPT_CHARS, one_line=False)
    rows = [
        ("model", payload.get("model") or "worker default"),
        ("tools", ", ".join(payload["tools"]) if "tools" in payload else "all registered"),
        ("max iterations", payload.get("max_iterations", 10)),
    ]
    shown = {"prompt", "model", "tools", "max_iterations", "output_schema"}
    if "output_schema" in payload:
        rows.append(("output schema", "given (the answer is validated JSON)"))
    rows += [(k.replace("_", " "), v) for k, v in payload.items() if k not in shown]
    table = "\n".join(f"| {name} | {_cell(value)} |" for name, value in rows)
    who = f" by {by}" if by else ""
    return (
        f"**Prompt**\n\n{prompt}\n\n| setting | value |\n| --- | --- |\n{table}\n\n"
        f"Started{who} with {via}."
    )


def run_summary(prompt: str) -> str:
    """The run's static summary: the prompt's first line."""
    return first_line(prompt, SUMMARY_CHARS)


async def send_message(
    client: Client,
    session_id: str,
    task_queue: str,
    text: str,
    by: str | None,
    memo: Mapping[str, Any] | None = None,
    session_input: Mapping[str, Any] | None = None,
) -> WorkflowUpdateHandle[TurnResult]:
    """Send one message to a session with update-with-start, starting it if needed (with
    `memo`, when it starts: what started it, and `session_input`: its tenant and starter);
    returns once it is accepted. A refusal is `MessageRefused`."""
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        SESSION_TYPE,
        dict(session_input or {}),
        id=session_id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        memo=memo,
        static_summary=first_line(text),  # kept only when this starts it
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
        raise MessageRefused(
            f"message refused: {user_reason(error)}", workflow_id=session_id
        ) from None
    except RPCError as error:
        raise explain_rpc(error, session_id, "cannot send the message") from None
