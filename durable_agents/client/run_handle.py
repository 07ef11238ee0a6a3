"""`RunHandle`: one `AgentWorkflow` run (or a session, for what waits in its running turn), as an
application, the CLI or a server sees it: what waits for a person and the answers to it, the
status, the result and the typed event stream. Every failure is a typed error
(`durable_agents.errors`); a refused answer leaves the run's history as it was.

    request = await run.next_request()            # a PendingRequest, or None once it ended
    await run.approve(request.call_id, digest=request.args_digest)
    result = await run.result()                   # AgentResult (RunFailedError otherwise)
    async for event in run.events(after=None): ... # from the first event; after=N: after N
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import (
    Client,
    RPCTimeoutOrCancelledError,
    WorkflowExecutionDescription,
    WorkflowQueryFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.client.connection import (
    QUERY_TIMEOUT,
    WorkflowRun,
    explain_rpc,
    is_running,
    not_found,
    run_tenant,
    status_name,
)
from durable_agents.client.maker_signing import signed_payload
from durable_agents.client.outcome import RunOutcome, await_outcome
from durable_agents.client.workflow_calls import (
    CLIENT_ASKED_TYPES,
    DECIDED_TYPES,
    answer_call,
    full_digest,
    pending_requests,
    query_status,
    refusal,
    signal,
    status_from_result,
    steer_run,
    was_answered,
)
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import ALL_PENDING, HumanDecision, PendingRequest
from durable_agents.contracts.client_tools import CLIENT_TOOL_RESULT_UPDATE
from durable_agents.contracts.events import TERMINAL_EVENT_TYPES, AgentEvent
from durable_agents.contracts.principals import DecisionMaker, Role
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.errors import (
    AgentError,
    AlreadyDecided,
    ApproverRoleMissing,
    DecisionRefused,
    InvalidInput,
    NotStartedHere,
    NoWorker,
    RunEnded,
    RunFailedError,
    RunNotFound,
)
from durable_agents.runtime.event_stream import (
    StreamReading,
    follow_events,
    read_events,
    read_range,
    stream_end,
)

STARTED_VIA: Final = "started_via"
"""The memo key that says which server started a run or a session (`mcp`, `a2a`, `serve`)."""
DIGEST: Final = re.compile(r"[0-9a-f]{8,64}")
"""An `args_digest`, or its start as shown (sha256: 64 hex digits; at least 8)."""
DIGEST_FIELD: Final = "args_digest"
POLL_SECONDS: Final = 0.3
UNSET: Any = object()
"""`tool_result(result=...)` not given (a `None` result is a result)."""
QueryT = TypeVar("QueryT")


def started_by(via: str) -> str:
    """What a server of kind `via` is called in messages."""
    return {
        "cli": "`agent run`",
        "mcp": "the MCP gateway (`agent mcp`)",
        "a2a": "the A2A gateway (`agent a2a`)",
        "serve": "the HTTP API (`agent serve`)",
    }.get(via, f"`{via}`")


def checked_digest(digest: str | None) -> str | None:
    """`digest` in lower case, or `InvalidInput` when it is not 8 to 64 hex digits."""
    if digest is None:
        return None
    digest = digest.strip().lower()
    if not DIGEST.fullmatch(digest):
        raise InvalidInput(
            f"{DIGEST_FIELD}: the hex args_digest `pending` shows (8 to 64 digits)",
            field=DIGEST_FIELD,
        )
    return digest


@dataclass(frozen=True)
class Steered:
    """Where a steering message went (a session forwards it to its running turn) and how many
    messages wait for the model's next call there (None: not known)."""

    workflow_id: str
    queued: int | None


class RunHandle:
    """A run of `AgentWorkflow` by workflow id (the latest run of a continue-as-new chain).

    With `owner` (a server's kind: `mcp`, `a2a`, `serve`), only a run that kind of server
    started (its memo says so) can be looked at or answered: `NotStartedHere` otherwise."""

    def __init__(
        self,
        client: Client,
        workflow_id: str,
        *,
        run_id: str | None = None,
        owner: str | None = None,
        tenant: str | None = None,
        maker: DecisionMaker | None = None,
        roles: frozenset[Role] | None = None,
    ) -> None:
        self.client = client
        self.id = workflow_id
        self.run_id = run_id
        """The run this handle was started as (None when it was opened by id)."""
        self.owner = owner
        self.tenant = tenant
        """The only tenant whose run this handle reaches (None: any): another tenant's run is
        `RunNotFound`, word for word as a missing one, so its existence does not leak."""
        self.maker = maker
        """Who this handle's decisions are signed by (a server's principal): their `by` is
        its name, whatever the caller passed."""
        self.roles = roles
        """The roles of the principal this handle decides for (None: not checked): an
        approval the call's policy reserves to a role it lacks is `ApproverRoleMissing`."""
        self._tenant_checked = False
        self.digest_name = DIGEST_FIELD
        """What the interface calls the digest, in the words of a `DigestMismatch` (the CLI:
        `--digest`)."""
        self.workflow: WorkflowRun = client.get_workflow_handle(
            workflow_id, run_id=run_id, result_type=AgentResult
        )
        """The temporalio handle (its result decodes as `AgentResult`; from `run_id` when
        given, else the latest run of the id)."""
        self._answered: set[str] = set()

    def __repr__(self) -> str:
        return f"RunHandle({self.id!r})"

    # -- looking -------------------------------------------------------------------------------

    async def describe(self) -> WorkflowExecutionDescription:
        """The workflow's description: `RunNotFound` when there is none, `NotStartedHere` when
        it is not `owner`'s."""
        try:
            description = await self.workflow.describe()
        except RPCError as error:
            raise explain_rpc(error, self.id) from None
        if self.tenant is not None and await run_tenant(description) != self.tenant:
            raise not_found(self.id)
        self._tenant_checked = True
        if self.owner is not None and (await description.memo()).get(STARTED_VIA) != self.owner:
            raise NotStartedHere(
                f"{self.id!r} was not started through {started_by(self.owner)}; only runs and "
                "sessions started through it can be looked at or answered here",
                workflow_id=self.id,
            )
        return description

    async def task_queue_if_running(self, doing: str) -> str:
        """The task queue of a run that still goes on; `RunEnded` (saying there is nothing to
        `doing`) once it ended."""
        description = await self.describe()
        if not is_running(description):
            status = status_name(description).lower()
            raise RunEnded(
                f"run {self.id!r} has already ended ({status}); there is nothing to {doing}",
                workflow_id=self.id,
                status=status,
            )
        return description.task_queue

    async def pending(self) -> list[PendingRequest]:
        """What waits for a person now, each with its `args_digest` ([] once the run ended);
        `NoWorker` when no worker answers the query."""
        description = await self.describe()
        if not is_running(description):
            return []
        return await pending_requests(self.workflow, description.task_queue)

    async def next_request(self, *, poll_seconds: float = POLL_SECONDS) -> PendingRequest | None:
        """The first request that waits for a person (other than those this handle answered),
        as soon as one does; None when the run ends first."""
        await self.describe()
        ending = asyncio.ensure_future(await_outcome(self.workflow))
        try:
            while not ending.done():
                with contextlib.suppress(
                    RPCError, WorkflowQueryFailedError, RPCTimeoutOrCancelledError
                ):
                    requests: list[PendingRequest] = await self.workflow.query(
                        "pending_approvals",
                        result_type=list[PendingRequest],
                        rpc_timeout=QUERY_TIMEOUT,
                    )
                    waiting = [r for r in requests if r.call_id not in self._answered]
                    if waiting:
                        return waiting[0]
                await asyncio.wait({ending}, timeout=poll_seconds)
            return None
        finally:
            if not ending.done():
                ending.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await ending

    async def query_status(
        self, timeout: float = QUERY_TIMEOUT.total_seconds()
    ) -> AgentStatus | None:
        """The `status` query's answer, or None when no worker answers within `timeout`."""
        return await query_status(self.workflow, timeout)

    async def query_state(self, query: str, result_type: type[QueryT]) -> QueryT:
        """The answer of the read-only query `query` (`status`; a session's `turn_status`),
        decoded as `result_type`, without describing the run first (a live view asks a few
        times a second): `NoWorker`, in the SDK's words, when no worker answers it;
        `RunNotFound` or `TemporalError` when the server refuses it."""
        await self._in_tenant()
        try:
            answer: QueryT = await self.workflow.query(
                query, result_type=result_type, rpc_timeout=QUERY_TIMEOUT
            )
        except (WorkflowQueryFailedError, RPCTimeoutOrCancelledError) as error:
            raise NoWorker(
                getattr(error, "message", None) or str(error), workflow_id=self.id
            ) from None
        except RPCError as error:
            raise explain_rpc(error, self.id) from None
        return answer

    async def status(self) -> AgentStatus:
        """Phase, turn, usage, pending requests and recent steps; a finished run's status is
        rebuilt from its result when no worker answers. `NoWorker` when nothing can tell."""
        description = await self.describe()
        state = await self.query_status()
        if state is None and not is_running(description):
            outcome = await await_outcome(self.workflow)
            if outcome.result is not None:
                state = status_from_result(outcome.result)
        if state is None:
            raise NoWorker(
                f"no worker answered the status query of {self.id!r} within "
                f"{QUERY_TIMEOUT.total_seconds():g} s; is a worker polling task queue "
                f"{description.task_queue!r}?",
                workflow_id=self.id,
                task_queue=description.task_queue,
            )
        return state

    async def outcome(self, *, wait: bool = True) -> RunOutcome | None:
        """How the run ended (waiting for its end with `wait`), or None while it runs."""
        description = await self.describe()
        if is_running(description) and not wait:
            return None
        return await await_outcome(self.workflow)

    async def result(self) -> AgentResult:
        """The run's result, once it ends: answer, stop reason, usage, steps. A run that
        failed, was cancelled or terminated, or timed out raises `RunFailedError`."""
        outcome = await self.outcome()
        assert outcome is not None
        if outcome.result is None:
            raise RunFailedError(outcome)
        return outcome.result

    async def events(
        self,
        *,
        after: int | None = None,
        stop_at: Collection[str] = TERMINAL_EVENT_TYPES,
        reading: StreamReading = "query",
    ) -> AsyncIterator[AgentEvent]:
        """The run's typed events (`contracts.events`) after offset `after` (None: from the
        first), live; it ends after the run's final event (`run_finished` / `run_failed`; one
        is made from the close status of a run that could not publish its own). Resume with
        the `offset` of the last event held: nothing is missed or repeated. `reading`: how
        the stream is polled (`runtime.event_stream`: its query, or updates)."""
        await self.describe()
        async for event in self.follow(after=after, stop_at=stop_at, reading=reading):
            yield event

    async def follow(
        self,
        *,
        after: int | None = None,
        stop_at: Collection[str] = (),
        reading: StreamReading = "query",
    ) -> AsyncIterator[AgentEvent]:
        """`events` without checking the run first: for a reader that outlives one request
        (`agent serve`'s feeds), or a session its first message has not started yet."""
        await self._in_tenant()
        source = follow_events(self.client, self.id, after=after, stop_at=stop_at, by=reading)
        try:
            async for event in source:
                yield event
        except RPCError as error:
            raise explain_rpc(error, self.id, "reading the events") from None
        finally:
            await source.aclose()  # type: ignore[attr-defined]

    def read_range(self, start: int, end: int | None = None) -> AsyncIterator[AgentEvent]:
        """The events at offsets `start` <= offset < `end` (None: up to the stream's end now),
        read with the stream's poll query: nothing enters the run's history."""
        return read_range(lambda after: self.read_events(after=after), start, end)

    async def stream_offset(self) -> int:
        """Where the event stream ends now: the offset its next event will have (0 for a
        workflow that does not exist yet, such as a session its first message will start)."""
        try:
            await self._in_tenant()
        except RunNotFound:
            return 0
        try:
            return await stream_end(self.client, self.id)
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return 0
            raise explain_rpc(error, self.id, "reading the stream's end") from None

    async def read_events(self, *, after: int | None = None) -> tuple[list[AgentEvent], int]:
        """The events retained now after `after`, and the offset to read from next (a query:
        nothing is recorded in the run's history)."""
        await self._in_tenant()
        try:
            return await read_events(self.client, self.id, after=after)
        except RPCError as error:
            raise explain_rpc(error, self.id, "reading the events") from None

    async def _in_tenant(self) -> None:
        """`RunNotFound` when the run is another tenant's (checked once per handle; nothing to
        check without a tenant, or for a workflow that does not exist yet)."""
        if self.tenant is None or self._tenant_checked:
            return
        try:
            description = await self.workflow.describe()
        except RPCError:
            return  # missing (or unreachable): the call itself says so
        if await run_tenant(description) != self.tenant:
            raise not_found(self.id)
        self._tenant_checked = True

    async def _check_role(self, task_queue: str, call_id: str) -> None:
        """`ApproverRoleMissing` when the call waits for an approver of a role this handle's
        principal lacks (an admin holds every role)."""
        requests = await pending_requests(self.workflow, task_queue)
        request = next((r for r in requests if r.call_id == call_id), None)
        role = request.approval.role if request and request.approval else None
        if role is None or self.roles is None or {role, "admin"} & self.roles:
            return
        who = self.maker.name if self.maker else "this principal"
        raise ApproverRoleMissing(
            f"cannot approve {call_id!r} in {self.id}: its approval policy reserves it to the "
            f"{role!r} role, which {who} lacks",
            call_id=call_id,
            workflow_id=self.id,
        )

    def signed(self, payload: dict[str, Any], message: str) -> dict[str, Any]:
        """`payload` of message `message` signed by this handle's `maker`: its name as `by`
        and the maker itself with its signature for this run (`client.maker_signing`), which
        the workflow checks and records (`HumanDecision.maker`)."""
        if self.maker is None:
            return payload
        return signed_payload(self.maker, self.id, message, payload)

    # -- answering -----------------------------------------------------------------------------

    async def approve(
        self,
        call_id: str,
        *,
        digest: str | None = None,
        edit: dict[str, Any] | None = None,
        by: str | None = None,
        comment: str | None = None,
    ) -> HumanDecision:
        """Let call `call_id` run (with `edit`: with these arguments instead), bound to
        `digest`, the `args_digest` of the arguments the person reviewed (or its first 8+ hex
        digits): `DigestMismatch` when they changed. Without a digest the decision records
        that none was given. The recorded decision; `CallNotFound`, `AlreadyDecided`,
        `DecisionRefused` (edited arguments the tool refuses, ...), `RunEnded`, `NoWorker`."""
        extra = {"args": edit, "by": by, "comment": comment}
        return await self._decide(call_id, "approve", checked_digest(digest), extra)

    async def reject(
        self, call_id: str, *, reason: str | None = None, by: str | None = None
    ) -> HumanDecision:
        """The call does not run; the model reads `reason`. Errors as for `approve`."""
        return await self._decide(call_id, "reject", None, {"reason": reason, "by": by})

    async def _decide(
        self, call_id: str, decision: str, digest: str | None, extra: dict[str, Any]
    ) -> HumanDecision:
        try:
            task_queue = await self.task_queue_if_running(decision)
        except RunEnded as ended:  # a second answer to a call decided before the run ended
            raise await self._decided_before_the_end(call_id, ended) from None
        if decision == "approve" and self.roles is not None:
            await self._check_role(task_queue, call_id)
        payload: dict[str, Any] = {"call_id": call_id, "decision": decision}
        payload |= {k: v for k, v in extra.items() if v is not None}
        try:
            if digest is not None:
                payload["args_digest"] = await full_digest(
                    self.workflow, task_queue, call_id, digest, self.digest_name
                )
            payload = self.signed(payload, "decide")
            recorded = await answer_call(self.workflow, task_queue, payload, verb=decision)
        except (RunEnded, RunNotFound) as closed:  # the run ended while the answer was on its way
            raise await self._decided_before_the_end(call_id, closed) from None
        self._answered.add(call_id)
        return recorded

    async def _decided_before_the_end(self, call_id: str, error: AgentError) -> AgentError:
        """What an answer to an ended run is: `AlreadyDecided` for a call answered before the
        end (however fast the run ended), else `error` itself."""
        if await was_answered(self.workflow, call_id):
            return AlreadyDecided(
                f"call {call_id!r} was decided before the run ended",
                call_id=call_id,
                workflow_id=self.id,
            )
        return error

    async def decide_all(
        self,
        decision: Literal["approve", "reject"],
        *,
        by: str | None = None,
        comment: str | None = None,
        reason: str | None = None,
    ) -> list[PendingRequest]:
        """Approve or reject every approval that waits now, at once (the signal of that name
        with `call_id` `*`; no digest binds them): the approvals it was sent for ([] when none
        waits: nothing is sent)."""
        task_queue = await self.task_queue_if_running(decision)
        requests = await pending_requests(self.workflow, task_queue)
        targets = [r for r in requests if r.kind is RequestKind.APPROVAL]
        if targets:
            extra = {"by": by, "comment": comment, "reason": reason}
            payload = {"call_id": ALL_PENDING, **{k: v for k, v in extra.items() if v is not None}}
            payload = self.signed(payload, decision)
            await signal(self.workflow, decision, payload, f"cannot {decision} '*'")
            self._answered.update(r.call_id for r in targets)
        return targets

    async def reply(self, call_id: str, text: str, *, by: str | None = None) -> PendingRequest:
        """Answer the `ask_user` question `call_id` with `text`. The reply is a signal, which
        the workflow would ignore silently when it cannot apply, so the question is checked
        first: `CallNotFound`, `AlreadyDecided`, `DecisionRefused` (the call waits for an
        approval), `InvalidInput` (no text). The request it answered."""
        if not text:
            raise InvalidInput("text: a reply needs the text of the answer", field="text")
        task_queue = await self.task_queue_if_running("reply to")
        requests = await pending_requests(self.workflow, task_queue)
        target = next((r for r in requests if r.call_id == call_id), None)
        if target is None:
            open_ids = ", ".join(r.call_id for r in requests) or "none"
            reason = f"no pending call {call_id!r}"
            message = (
                f"cannot reply to {call_id!r} in {self.id}: no pending question {call_id!r} "
                f"(unknown or already answered); pending: {open_ids}"
            )
            raise await refusal(self.workflow, call_id, reason, message)
        if target.kind.decided_by is not RequestKind.QUESTION:
            raise DecisionRefused(
                f"cannot reply to {call_id!r}: it waits for {target.kind.wanted}",
                call_id=call_id,
                workflow_id=self.id,
            )
        payload = {"call_id": call_id, "text": text, **({"by": by} if by else {})}
        payload = self.signed(payload, "reply")
        await signal(self.workflow, "reply", payload, f"cannot reply to {call_id!r}")
        self._answered.add(call_id)
        return target

    async def tool_result(
        self,
        call_id: str,
        *,
        result: Any = UNSET,
        error: str | None = None,
        by: str | None = None,
    ) -> HumanDecision:
        """Answer a client tool call (`client_tools`) with its `result` or an `error`: the
        recorded answer. A result that breaks the tool's `result_schema` is
        `DecisionRefused` naming why; `CallNotFound`, `AlreadyDecided` as for `approve`."""
        task_queue = await self.task_queue_if_running("answer in it")
        payload: dict[str, Any] = {"call_id": call_id}
        if result is not UNSET:
            payload["result"] = result
        payload |= {k: v for k, v in {"error": error, "by": by}.items() if v is not None}
        if self.maker is not None:
            payload["by"] = self.maker.name
        recorded = await answer_call(
            self.workflow, task_queue, payload, verb="answer", update=CLIENT_TOOL_RESULT_UPDATE
        )
        self._answered.add(call_id)
        return recorded

    async def was_answered(self, call_id: str, *, client_tool: bool = False) -> bool:
        """Whether `call_id` was decided (a client tool call: answered) in this run."""
        answered_types = CLIENT_ASKED_TYPES if client_tool else DECIDED_TYPES
        return await was_answered(self.workflow, call_id, answered_types)

    async def steer(self, text: str, *, by: str | None = None) -> Steered:
        """A message the model reads at its next call, without restarting the run (a session
        forwards it to its running turn). `MessageRefused` when it cannot apply."""
        if not text.strip():
            raise InvalidInput("the steering text is empty", field="text")
        task_queue = await self.task_queue_if_running("steer")
        payload = self.signed({"text": text, **({"by": by} if by else {})}, "steer")
        queued = await steer_run(self.workflow, task_queue, payload)
        if isinstance(queued, str):  # a session forwarded it to its running turn
            return Steered(queued, None)
        return Steered(self.id, len(queued) if isinstance(queued, list) else None)

    async def history_events(self) -> list[HistoryEvent]:
        """The history of every run of this workflow's continue-as-new chain, first run first
        (from `run_id`, the run this handle started, else the latest run)."""
        await self._in_tenant()
        events: list[HistoryEvent] = []
        run_id = self.run_id
        continued = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
        while True:
            try:
                history = await self.client.get_workflow_handle(
                    self.id, run_id=run_id
                ).fetch_history()
            except RPCError as error:
                raise explain_rpc(error, self.id, "reading the history") from None
            events += history.events
            last = history.events[-1] if history.events else None
            if last is None or last.event_type != continued or run_id is None:
                return events
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id

    async def terminate(self, reason: str) -> None:
        """End the run at once, without letting it clean up (after a `cancel` it ignored)."""
        await self._in_tenant()
        try:
            await self.workflow.terminate(reason)
        except RPCError as error:
            raise explain_rpc(error, self.id, "terminating the run") from None

    async def cancel(self) -> None:
        """Ask the run to cancel (it ends as cancelled); `RunEnded` once it has ended."""
        await self.task_queue_if_running("cancel")
        try:
            await self.workflow.cancel()
        except RPCError as error:
            raise explain_rpc(error, self.id, "cannot cancel") from None
