"""`SessionPeople`: what people send a session's running turn (the `People` of a session).

A turn inside the session (`InlineTurn`) takes each signal and update in its own loop. A turn
that is its own child run (`<session>/turn-<n>`) gets each signal forwarded to it by a signal
(`SignalExternalWorkflowExecutionInitiated` in the session's history), and each update
(`decide`, `edit_plan`, `tool_result`) through the `forward_to_turn` activity, since workflows
cannot send updates: the session's update answers what the turn answered, its decision or its
refusal with the turn's reason, and the session's history holds the update and the activity
that forwarded it. Someone driving with the Temporal CLI needs only the session's id. With no
turn running, a signal is logged and ignored and an update refused.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal, Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, ValidationError

    from durable_agents.contracts.agent_status import AgentStatus
    from durable_agents.contracts.agents import CHILD_PENDING_SIGNAL, ChildPending
    from durable_agents.contracts.approvals import (
        ALL_PENDING,
        DECISION_REFUSED,
        ApproveSignal,
        DecideUpdate,
        HumanDecision,
        PendingRequest,
    )
    from durable_agents.contracts.client_tools import CLIENT_TOOL_REFUSED
    from durable_agents.contracts.errors import STEER_REFUSED
    from durable_agents.contracts.messages import SteerMessage
    from durable_agents.contracts.request_kind import RequestKind
    from durable_agents.contracts.session import RunningTurn
    from durable_agents.contracts.turn_forwarding import (
        FORWARD_TO_TURN_ACTIVITY,
        ForwardedName,
        ForwardedUpdate,
    )
    from durable_agents.loop.approvals import bound_approvals
    from durable_agents.workflows.agent_loop import AgentLoop
    from durable_agents.workflows.inline_turn import InlineTurn
    from durable_agents.workflows.makers import MESSAGE_MODELS, believed, countersigned
    from durable_agents.workflows.refusals import (
        BadInput,
        parse_or_ignore,
        parse_or_refuse,
        read_payload,
        refuse,
    )

FORWARD_TIMEOUT = timedelta(seconds=30)
"""How long one attempt to hand an update to the child turn may take (the turn answers at once
when its worker is up)."""
FORWARD_RETRY = RetryPolicy(maximum_attempts=3)


class SessionTurns(Protocol):
    """What `SessionPeople` reads of its session."""

    @property
    def running_turn(self) -> RunningTurn | None: ...

    @property
    def inline_turn(self) -> InlineTurn | None: ...

    @property
    def running_turn_pending(self) -> list[PendingRequest]: ...


class SessionPeople:
    """The `People` of a session (see the module docstring)."""

    def __init__(self, session: SessionTurns) -> None:
        self._session = session

    async def approve(self, raw: Any) -> None:
        await self._forward("approve", raw)

    async def reject(self, raw: Any) -> None:
        await self._forward("reject", raw)

    async def reply(self, raw: Any) -> None:
        await self._forward("reply", raw)

    async def steer_signal(self, raw: Any) -> None:
        await self._forward("steer", raw)

    async def child_pending(self, raw: Any) -> None:
        """From a sub-agent of an inline turn. One that arrives late from an earlier turn's
        sub-agent (its ids start with another turn) is dropped."""
        report = parse_or_ignore(ChildPending, raw, CHILD_PENDING_SIGNAL, max_bytes=None)
        turn = self._session.inline_turn
        if report is None or turn is None or not report.workflow_id.startswith(f"{turn.scope}/"):
            workflow.logger.warning("signal %s ignored: no such sub-agent", CHILD_PENDING_SIGNAL)
            return
        await turn.agent.child_pending(raw)

    async def decide(self, raw: Any) -> HumanDecision:
        """The running turn's `decide`: an inline turn's loop takes it, a child turn gets it
        (bound to the digest shown here, as a forwarded approval is)."""
        loop = self._inline_loop()
        if loop is not None:
            return await loop.decide(raw)
        update = parse_or_refuse(DecideUpdate, raw, "decide input", DECISION_REFUSED)
        update = await believed(update, "decide")
        running = self._child_turn_or_refuse(DECISION_REFUSED)
        payload = await countersigned(running.workflow_id, "decide", self._bound_decision(update))
        return await self._forward_update("decide", payload, DECISION_REFUSED)

    def validate_decide(self, raw: Any) -> None:
        loop = self._inline_loop()
        if loop is not None:
            return loop.validate_decide(raw)
        self._child_turn_or_refuse(DECISION_REFUSED)
        parse_or_refuse(DecideUpdate, raw, "decide input", DECISION_REFUSED)

    async def tool_result(self, raw: Any) -> HumanDecision:
        """The running turn's client tool result (an inline turn's loop, or the child turn)."""
        return await self._turn_update("tool_result", raw, CLIENT_TOOL_REFUSED)

    def validate_tool_result(self, raw: Any) -> None:
        self._validate_turn_update("tool_result", raw, CLIENT_TOOL_REFUSED)

    async def edit_plan(self, raw: Any) -> HumanDecision:
        return await self._turn_update("edit_plan", raw, DECISION_REFUSED)

    def validate_edit_plan(self, raw: Any) -> None:
        self._validate_turn_update("edit_plan", raw, DECISION_REFUSED)

    async def _turn_update(
        self, name: Literal["tool_result", "edit_plan"], raw: Any, error_type: str
    ) -> HumanDecision:
        """Update `name` for the running turn: the inline turn's loop answers it, or the child
        turn does (`_forward_update`), which reads and checks the input as its own."""
        loop = self._inline_loop()
        if loop is not None:
            handler = loop.tool_result if name == "tool_result" else loop.edit_plan
            return await handler(raw)
        payload = self._child_turn_input(raw, error_type)
        return await self._forward_update(name, payload, error_type)

    def _validate_turn_update(
        self, name: Literal["tool_result", "edit_plan"], raw: Any, error_type: str
    ) -> None:
        loop = self._inline_loop()
        if loop is None:
            self._child_turn_input(raw, error_type)
        elif name == "tool_result":
            loop.validate_tool_result(raw)
        else:
            loop.validate_edit_plan(raw)

    async def steer(self, raw: Any) -> str:
        """Steer the running turn; returns where the turn runs."""
        running = self._running_or_refuse()
        turn = self._session.inline_turn
        if turn is not None:
            await turn.agent.steer(raw)
        else:
            steer = parse_or_refuse(SteerMessage, raw, "steer input", STEER_REFUSED)
            payload = await self._signed_for(running.workflow_id, "steer", steer, raw)
            await workflow.get_external_workflow_handle(running.workflow_id).signal(
                "steer", payload
            )
        return running.workflow_id

    def validate_steer(self, raw: Any) -> None:
        parse_or_refuse(SteerMessage, raw, "steer input", STEER_REFUSED)
        self._running_or_refuse()
        turn = self._session.inline_turn
        if turn is not None:
            turn.agent.validate_steer(raw)

    def turn_status(self) -> AgentStatus:
        """The running inline turn's `status`; a child turn's is at its own id."""
        loop = self._inline_loop()
        if loop is None:
            running = self._session.running_turn
            where = f": query {running.workflow_id}" if running is not None else ""
            refuse(f"no turn is running inside the session{where}", DECISION_REFUSED)
        return loop.status()

    def pending(self) -> list[PendingRequest]:
        """The running turn's pending requests; their commands name where the turn runs (the
        session's own id for an inline turn)."""
        return list(self._session.running_turn_pending)

    def _running_or_refuse(self) -> RunningTurn:
        running = self._session.running_turn
        if running is None:
            refuse("no turn is running: send a message instead", STEER_REFUSED)
        return running

    def _inline_loop(self) -> AgentLoop | None:
        """The running inline turn's loop; None when no turn runs inside the session."""
        turn = self._session.inline_turn
        return turn.agent if turn is not None else None

    def _child_turn_or_refuse(self, error_type: str) -> RunningTurn:
        """The running child turn (called when no turn runs inline), or a refusal."""
        running = self._session.running_turn
        if running is None:
            refuse("no turn is running in the session", error_type)
        return running

    def _child_turn_input(self, raw: Any, error_type: str) -> Any:
        """An update's input for the running child turn, as JSON (the turn reads and checks
        it as its own), or a refusal: no turn runs, or the input is not JSON."""
        self._child_turn_or_refuse(error_type)
        try:
            return read_payload(raw, max_bytes=None)  # bounded by Temporal; the turn checks it
        except BadInput as error:
            refuse(f"invalid input: {error}", error_type)

    def _bound_decision(self, update: DecideUpdate) -> dict[str, Any]:
        """A `decide` for the child turn; an approval is bound to the digest of the arguments
        shown here when the person gave none (the turn refuses it if its real call differs), as
        a forwarded `approve` signal is."""
        shown = {r.call_id: r.args_digest for r in self._session.running_turn_pending}
        digest = update.args_digest
        if digest is None and update.decision == "approve":
            digest = shown.get(update.call_id)
        return update.model_copy(update={"args_digest": digest}).model_dump(exclude_none=True)

    async def _forward_update(
        self, name: ForwardedName, payload: Any, error_type: str
    ) -> HumanDecision:
        """Hand update `name` to the running child turn (`forward_to_turn`) and answer what the
        turn answered: its decision, or its refusal (message and type) as this update's."""
        running = self._child_turn_or_refuse(error_type)
        info = workflow.current_update_info()
        own_id = info.id if info is not None and info.id else str(workflow.uuid4())
        request = ForwardedUpdate(
            workflow_id=running.workflow_id,
            update=name,
            update_id=f"{workflow.info().workflow_id}/{own_id}",
            payload=payload,
        )
        try:
            return await workflow.execute_activity(
                FORWARD_TO_TURN_ACTIVITY,
                request,
                result_type=HumanDecision,
                start_to_close_timeout=FORWARD_TIMEOUT,
                retry_policy=FORWARD_RETRY,
                summary=f"{name} → {running.workflow_id}",
            )
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError):
                refuse(cause.message, cause.type or error_type)
            refuse(f"the turn {running.workflow_id} could not be reached: {cause}", error_type)

    async def _forward(self, name: str, raw: Any) -> None:
        """Hand a signal to the running turn: the inline turn's loop, or the child run."""
        running = self._session.running_turn
        if running is None:
            workflow.logger.warning("signal %s ignored: no turn is running", name)
            return
        turn = self._session.inline_turn
        if turn is not None:
            loop = turn.agent
            handlers = {
                "approve": loop.approve,
                "reject": loop.reject,
                "reply": loop.reply,
                "steer": loop.steer_signal,
            }
            await handlers[name](raw)
            return
        message = _message_or_none(name, raw)  # (one that does not read: the turn says why)
        if message is not None:
            message = await believed(message, name)
        payloads: list[Any] = [raw]
        if name == "approve":
            approval = message if isinstance(message, ApproveSignal) else None
            payloads = self._bound_approvals(approval) if approval is not None else []
        handle = workflow.get_external_workflow_handle(running.workflow_id)
        for unsigned in payloads:
            payload = unsigned
            if message is not None:
                payload = await self._signed_for(running.workflow_id, name, message, unsigned)
            try:
                await handle.signal(name, payload)
            except Exception as error:
                workflow.logger.warning("signal %s not forwarded: %s", name, error)

    async def _signed_for(
        self, workflow_id: str, name: str, message: BaseModel, payload: Any
    ) -> Any:
        """`payload` (of `message`, as this session believes its maker) for the child turn
        `workflow_id`: as it came when it names no maker, else its maker signed for the turn
        (`workflows.makers.countersigned`)."""
        if getattr(message, "maker", None) is None:
            return payload
        if not isinstance(payload, dict):
            payload = message.model_dump(exclude_none=True)
        return await countersigned(workflow_id, name, payload)

    def _bound_approvals(self, signal: ApproveSignal) -> list[dict[str, Any]]:
        """An approval for a child turn, bound to what the session shows: one approval per call
        it names (each with the digest of the arguments shown here), so the turn refuses one
        whose real call differs; `*` with edited arguments only when one call is shown."""
        shown = [
            (r.call_id, r.args_digest)
            for r in self._session.running_turn_pending
            if r.kind == RequestKind.APPROVAL and signal.call_id in (ALL_PENDING, r.call_id)
        ]
        bound = bound_approvals(signal.model_dump(exclude_none=True), shown)
        if bound is None:
            workflow.logger.warning("signal approve ignored: edited args need one call_id")
            return []
        return bound


def _message_or_none(name: str, raw: Any) -> BaseModel | None:
    """Signal `name`'s payload as its model, or None when it does not read (nothing logged: the
    turn it goes to logs why it ignores it; an approval that does not read goes nowhere)."""
    try:
        return MESSAGE_MODELS[name].model_validate(read_payload(raw))
    except (BadInput, ValidationError):
        if name == "approve":
            workflow.logger.warning("signal approve ignored: invalid input")
        return None
