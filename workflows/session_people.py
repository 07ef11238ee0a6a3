"""`SessionPeople`: what people send a session's running turn (the `People` of a session).

A turn inside the session (`InlineTurn`) takes each signal and update in its own loop; a turn
that is its own child run gets each signal forwarded to it, and is named where an update cannot
be forwarded (`decide`, `edit_plan`: workflows cannot send updates), so the refusal says where
to send it. With no turn running, a signal is logged and ignored and an update refused.
"""

from __future__ import annotations

from typing import Any, Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.agent_status import AgentStatus
    from contracts.agents import CHILD_PENDING_SIGNAL, ChildPending
    from contracts.approvals import (
        ALL_PENDING,
        DECISION_REFUSED,
        ApproveSignal,
        HumanDecision,
        PendingRequest,
    )
    from contracts.errors import STEER_REFUSED
    from contracts.messages import SteerMessage
    from contracts.request_kind import RequestKind
    from contracts.session import RunningTurn
    from loop.approvals import bound_approvals
    from workflows.agent_loop import AgentLoop
    from workflows.inline_turn import InlineTurn
    from workflows.refusals import parse_or_ignore, parse_or_refuse, refuse

BOUND_TURN_APPROVALS_PATCH = "bound-turn-approvals"
"""Sessions recorded before approvals for a child turn were bound to what they showed replay
forwarding the approval as it came."""


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

    def decide(self, raw: Any) -> HumanDecision:
        """An inline turn's `decide`; a child turn takes it at its own id, which its pending
        requests name."""
        return self._inline_loop().decide(raw)

    def validate_decide(self, raw: Any) -> None:
        self._inline_loop().validate_decide(raw)

    def tool_result(self, raw: Any) -> HumanDecision:
        """An inline turn's client tool result; a child turn takes it at its own id."""
        return self._inline_loop().tool_result(raw)

    def validate_tool_result(self, raw: Any) -> None:
        self._inline_loop().validate_tool_result(raw)

    def edit_plan(self, raw: Any) -> HumanDecision:
        return self._inline_loop().edit_plan(raw)

    def validate_edit_plan(self, raw: Any) -> None:
        self._inline_loop().validate_edit_plan(raw)

    async def steer(self, raw: Any) -> str:
        """Steer the running turn; returns where the turn runs."""
        running = self._running_or_refuse()
        turn = self._session.inline_turn
        if turn is not None:
            await turn.agent.steer(raw)
        else:
            await workflow.get_external_workflow_handle(running.workflow_id).signal("steer", raw)
        return running.workflow_id

    def validate_steer(self, raw: Any) -> None:
        parse_or_refuse(SteerMessage, raw, "steer input", STEER_REFUSED)
        self._running_or_refuse()
        turn = self._session.inline_turn
        if turn is not None:
            turn.agent.validate_steer(raw)

    def turn_status(self) -> AgentStatus:
        """The running inline turn's `status`."""
        return self._inline_loop().status()

    def pending(self) -> list[PendingRequest]:
        """The running turn's pending requests; their commands name where the turn runs (the
        session's own id for an inline turn)."""
        return list(self._session.running_turn_pending)

    def _running_or_refuse(self) -> RunningTurn:
        running = self._session.running_turn
        if running is None:
            refuse("no turn is running: send a message instead", STEER_REFUSED)
        return running

    def _inline_loop(self) -> AgentLoop:
        """The running inline turn's loop, or a refusal that says where a child turn takes it."""
        turn = self._session.inline_turn
        if turn is None:
            running = self._session.running_turn
            where = f": send it to {running.workflow_id}" if running is not None else ""
            refuse(f"no turn is running inside the session{where}", DECISION_REFUSED)
        return turn.agent

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
        payloads: list[Any] = [raw]
        if name == "approve" and running.token and workflow.patched(BOUND_TURN_APPROVALS_PATCH):
            payloads = self._bound_approvals(raw)
        handle = workflow.get_external_workflow_handle(running.workflow_id)
        for payload in payloads:
            try:
                await handle.signal(name, payload)
            except Exception as error:
                workflow.logger.warning("signal %s not forwarded: %s", name, error)

    def _bound_approvals(self, raw: Any) -> list[dict[str, Any]]:
        """An approval for a child turn, bound to what the session shows: one approval per call
        it names (each with the digest of the arguments shown here), so the turn refuses one
        whose real call differs; `*` with edited arguments only when one call is shown."""
        signal = parse_or_ignore(ApproveSignal, raw, "approve")
        if signal is None:
            return []
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
