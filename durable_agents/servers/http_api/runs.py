"""What each route of the HTTP API does with Temporal, in terms of HTTP statuses.

Built on what the `agent` CLI and the other servers already have: `servers.run_control`
(starting runs and sending session messages, marked `started_via: serve`), `cli.commands`
(the `status` and `pending_approvals` queries), `cli.outcome` (how a run ended),
`cli.progress.send_decision` (the `decide` update) and `cli.decisions.full_digest` (the digest
rules). What those raise as one line for a terminal becomes an `ApiError` with the status an
HTTP client can act on:

- 404: no such workflow, or no such call waiting in it;
- 409: the run has ended, the call was already decided (or a client tool call answered), the
  digest does not match the call's arguments, a run with that id is already running, the
  workflow refused the request;
- 422: what was sent cannot apply (an answer to an approval, edited arguments that are invalid,
  a client tool's result that breaks its `result_schema`);
- 503 / 504: no worker answered in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.cli.client_tools import SEND_TIMEOUT_SECONDS, send_result
from durable_agents.cli.commands import (
    CLOSED_QUERY_TIMEOUT_SECONDS,
    QUERY_TIMEOUT,
    pending_requests,
    query_status,
    status_from_result,
)
from durable_agents.cli.connection import RunHandle, explain_rpc, is_running, status_name
from durable_agents.cli.decisions import full_digest
from durable_agents.cli.errors import CliError
from durable_agents.cli.outcome import await_outcome
from durable_agents.cli.progress import DECIDE_TIMEOUT_SECONDS, send_decision, user_reason
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.servers.http_api.bodies import Decision, StartRun, Steer, ToolResult
from durable_agents.servers.http_api.errors import ApiError
from durable_agents.servers.http_api.feeds import read_range
from durable_agents.servers.run_control import DIGEST_FIELD, STARTED_VIA, RunControl, digest_problem

VIA = "serve"
"""`started_via` in the memo of the runs and sessions `agent serve` starts."""
DECIDED_TYPES = frozenset({"approval_decided", "question_answered"})
"""The events that say a call was decided by a person."""
CLIENT_ASKED_TYPES = frozenset({"client_tool_requested"})
"""The event that says a client tool call waited (no longer pending: it was answered, or it
timed out)."""


def no_worker(error: CliError) -> ApiError:
    return ApiError(503, str(error))


class Runs:
    """The run routes' work (see the module docstring)."""

    def __init__(self, client: Client, task_queue: str) -> None:
        self.client = client
        self.task_queue = task_queue
        self.control = RunControl(client, task_queue, VIA)

    def handle(self, workflow_id: str) -> RunHandle:
        return self.client.get_workflow_handle(workflow_id, result_type=AgentResult)

    async def described(self, workflow_id: str) -> tuple[RunHandle, WorkflowExecutionDescription]:
        """The workflow's handle and description, or 404."""
        handle = self.handle(workflow_id)
        try:
            return handle, await handle.describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise ApiError(404, f"no workflow with id {workflow_id!r}") from None
            raise ApiError(502, str(explain_rpc(error, workflow_id))) from None

    async def running(self, workflow_id: str, doing: str) -> tuple[RunHandle, str]:
        """A workflow that still runs (its handle and task queue), else 404 or 409."""
        handle, description = await self.described(workflow_id)
        if not is_running(description):
            raise ApiError(
                409,
                f"{workflow_id!r} has already ended ({status_name(description).lower()}); "
                f"there is nothing to {doing}",
            )
        return handle, description.task_queue

    # -- starting and reading ------------------------------------------------------------------

    async def start(self, body: StartRun) -> RunHandle:
        """Start an `AgentWorkflow` run (409 if one with the id runs)."""
        workflow_id = body.id or f"serve-{uuid.uuid4().hex[:10]}"
        with contextlib.suppress(ApiError):
            _, description = await self.described(workflow_id)
            if is_running(description):
                raise ApiError(409, f"a run with workflow id {workflow_id!r} is already running")
        try:
            return await self.control.start(body.workflow_input(), workflow_id=workflow_id)
        except CliError as error:
            raise ApiError(409 if "already running" in str(error) else 502, str(error)) from None

    async def status(self, workflow_id: str) -> dict[str, Any]:
        """As `agent status --json`: the execution status and the `status` query's answer."""
        handle, description = await self.described(workflow_id)
        running = is_running(description)
        timeout = QUERY_TIMEOUT.total_seconds() if running else CLOSED_QUERY_TIMEOUT_SECONDS
        state = await query_status(handle, timeout)
        data: dict[str, Any] = {
            "workflow_id": workflow_id,
            "execution_status": status_name(description),
            "workflow_type": description.workflow_type,
            "static_summary": await description.static_summary(),
            "started_via": (await description.memo()).get(STARTED_VIA),
        }
        if not running:
            outcome = await self._outcome(handle)
            if state is None and outcome.result is not None:
                state = status_from_result(outcome.result)
            if outcome.result is None:
                data["error"] = {"type": outcome.error_type, "message": outcome.message}
        elif state is None:
            raise ApiError(
                503,
                f"{workflow_id!r} is running but no worker answered the status query; is a "
                f"worker polling task queue {description.task_queue!r}?",
            )
        if state is not None:
            data.update(state.model_dump(mode="json"))
        return data

    async def _outcome(self, handle: RunHandle) -> Any:
        try:
            return await await_outcome(handle)
        except CliError as error:
            raise ApiError(502, str(error)) from None

    async def result(self, workflow_id: str, wait: bool) -> dict[str, Any] | None:
        """The result as `agent result --json` shows it; None while the run goes on."""
        handle, description = await self.described(workflow_id)
        if is_running(description) and not wait:
            return None
        return dict((await self._outcome(handle)).to_json())

    async def pending(self, workflow_id: str) -> list[PendingRequest]:
        """What waits for a person ([] once the run has ended)."""
        handle, description = await self.described(workflow_id)
        if not is_running(description):
            return []
        try:
            return await pending_requests(handle, description.task_queue)
        except CliError as error:
            raise no_worker(error) from None

    # -- answering -----------------------------------------------------------------------------

    async def decide(self, workflow_id: str, body: Decision) -> dict[str, Any]:
        """Approve, reject, edit (approve with `args`) or reply; the recorded decision."""
        problem = digest_problem(body.decision, body.args_digest)
        if problem is not None:
            raise ApiError(
                422,
                f"invalid input: {DIGEST_FIELD}: {problem}",
                fields=[{"field": DIGEST_FIELD, "message": problem}],
            )
        handle, task_queue = await self.running(workflow_id, f"{body.decision} in it")
        if body.decision == "reply":
            return await self._reply(handle, task_queue, body)
        payload = body.update()
        if body.args_digest is not None:
            try:
                payload["args_digest"] = await full_digest(
                    handle, task_queue, body.call_id, body.args_digest.lower(), DIGEST_FIELD
                )
            except CliError as error:
                raise ApiError(409, str(error)) from None
        recorded = await self._answer(
            handle, task_queue, body.call_id, send_decision(handle, payload), "decision",
            DECIDE_TIMEOUT_SECONDS, DECIDED_TYPES,
        )  # fmt: skip
        return recorded.model_dump(mode="json")

    async def tool_result(self, workflow_id: str, body: ToolResult) -> dict[str, Any]:
        """The `tool_result` update: a client tool's result or error; the recorded answer.
        Its validator refuses an unknown or answered call and a result that breaks the tool's
        `result_schema` before anything enters history (404 / 409 / 422 naming the problem)."""
        handle, task_queue = await self.running(workflow_id, "answer in it")
        payload = body.model_dump(mode="json", exclude_unset=True)
        recorded = await self._answer(
            handle, task_queue, body.call_id, send_result(handle, payload), "result",
            SEND_TIMEOUT_SECONDS, CLIENT_ASKED_TYPES,
        )  # fmt: skip
        return recorded.model_dump(mode="json")

    async def _answer(
        self,
        handle: RunHandle,
        task_queue: str,
        call_id: str,
        sending: Awaitable[HumanDecision],
        what: str,
        seconds: float,
        answered_types: frozenset[str],
    ) -> HumanDecision:
        """Run an update that answers `call_id` (`decide`, `tool_result`): the recorded answer,
        or the `ApiError` its refusal or a missing worker means."""
        try:
            return await sending
        except WorkflowUpdateFailedError as error:
            reason = user_reason(error)
            raise await self._refused(handle, call_id, reason, answered_types) from None
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
            raise ApiError(
                504,
                f"no worker took the {what} for {call_id!r} within {seconds:g} s (is a worker "
                f"polling task queue {task_queue!r}?); it may still apply when one does",
            ) from None
        except RPCError as error:
            raise ApiError(502, str(explain_rpc(error, handle.id))) from None

    async def _reply(self, handle: RunHandle, task_queue: str, body: Decision) -> dict[str, Any]:
        """The `reply` signal, after checking that the call is an open question (the signal
        alone is ignored silently when it cannot apply)."""
        if not body.text:
            raise ApiError(422, "text: a reply needs the text of the answer", field="text")
        try:
            requests = await pending_requests(handle, task_queue)
        except CliError as error:
            raise no_worker(error) from None
        target = next((r for r in requests if r.call_id == body.call_id), None)
        if target is None:
            raise await self._refused(handle, body.call_id, f"no pending call {body.call_id!r}")
        if target.kind is not RequestKind.QUESTION:
            raise ApiError(
                422,
                f"{body.call_id!r} waits for {target.kind.wanted}: decide 'approve' or 'reject'",
                field="decision",
            )
        try:
            await handle.signal("reply", body.reply())
        except RPCError as error:
            raise ApiError(502, str(explain_rpc(error, handle.id))) from None
        return {"call_id": body.call_id, "kind": target.kind.value, "outcome": "answered"}

    async def _refused(
        self,
        handle: RunHandle,
        call_id: str,
        reason: str,
        answered_types: frozenset[str] = DECIDED_TYPES,
    ) -> ApiError:
        """The status of a refused answer: 409 for a call already decided or answered (or
        other arguments than the digest names), 404 for a call that never waited, 422 else (an
        approval of a question, edited arguments the tool refuses, a client tool's result that
        breaks its `result_schema`)."""
        if reason.startswith(("no pending call", "no turn is running")):
            if await self.was_decided(handle, call_id, answered_types):
                noun = "answered" if answered_types is CLIENT_ASKED_TYPES else "decided"
                return ApiError(409, f"call {call_id!r} has already been {noun}", call_id=call_id)
            return ApiError(404, f"no call {call_id!r} waits in {handle.id}: {reason}")
        if "args_digest" in reason:
            return ApiError(409, reason, call_id=call_id)
        return ApiError(422, reason, call_id=call_id)

    async def was_decided(
        self, handle: RunHandle, call_id: str, answered_types: frozenset[str] = DECIDED_TYPES
    ) -> bool:
        """Whether `call_id` was answered in this run: one of `answered_types` for it in its
        event stream, or a step of it that a person (or the client) answered in the steps its
        `status` query shows."""
        with contextlib.suppress(Exception):
            async for event in read_range(self.client, handle.id, 0):
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

    async def steer(self, workflow_id: str, body: Steer) -> dict[str, Any]:
        """The `steer` update: where the message went and how many wait for the model."""
        handle, _ = await self.running(workflow_id, "steer")
        try:
            queued: Any = await asyncio.wait_for(
                handle.execute_update("steer", body.model_dump(exclude_none=True)),
                timeout=DECIDE_TIMEOUT_SECONDS,
            )
        except WorkflowUpdateFailedError as error:
            raise ApiError(409, f"cannot steer {workflow_id}: {user_reason(error)}") from None
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
            raise ApiError(
                504, f"no worker took the message within {DECIDE_TIMEOUT_SECONDS:g} s"
            ) from None
        except RPCError as error:
            raise ApiError(502, str(explain_rpc(error, workflow_id))) from None
        if isinstance(queued, str):  # a session forwarded it to its running turn
            return {"workflow_id": queued, "queued": None}
        waiting = len(queued) if isinstance(queued, list) else None
        return {"workflow_id": workflow_id, "queued": waiting}

    async def cancel(self, workflow_id: str) -> dict[str, Any]:
        handle, _ = await self.running(workflow_id, "cancel")
        try:
            await handle.cancel()
        except RPCError as error:
            raise ApiError(502, str(explain_rpc(error, workflow_id))) from None
        return {"workflow_id": workflow_id, "cancel_requested": True}
