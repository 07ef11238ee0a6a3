"""`RunControls`: what people send to a running agent and ask of it, for `AgentWorkflow`.

Signals `approve`, `reject`, `reply` and the update `decide` answer calls waiting for a person
(this run's, or its sub-agents', which are forwarded); `edit_plan` replaces a plan waiting for
approval; `steer` adds a message for the model's next call; queries `status` and
`pending_approvals` show where the run is. A signal that cannot apply is logged and ignored; an
update that cannot apply is refused by its validator, so nothing enters history.

The state these act on (`_pad`, `_phase`, `_gate`, `_children`, ...) is owned and set up by
`AgentWorkflow`; this class only reads and updates it through the same functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from contracts.agent_input import AgentInput
    from contracts.agent_result import StopReason
    from contracts.agent_status import AgentStatus, Phase
    from contracts.agents import CHILD_PENDING_SIGNAL, ChildPending
    from contracts.approvals import (
        ALL_PENDING,
        DECISION_REFUSED,
        ApproveSignal,
        DecideUpdate,
        HumanDecision,
        PendingRequest,
        RejectSignal,
        ReplySignal,
        WaitKind,
    )
    from contracts.errors import STEER_REFUSED
    from contracts.messages import SteerMessage
    from contracts.plan import EditPlan
    from contracts.request_kind import RequestKind
    from contracts.scratchpad import Scratchpad
    from loop import approvals
    from loop.plan import plan_args
    from loop.progress import steered, steering_refusal
    from loop.status import run_status
    from workflows.delegation import ChildRequests
    from workflows.human_gate import HumanGate
    from workflows.refusals import NO_INPUT, parse_or_ignore, parse_or_refuse, refuse

SignalT = TypeVar("SignalT", bound=BaseModel)


class RunControls:
    """The handlers people use on a run (see the module docstring)."""

    _params: AgentInput | None
    _pad: Scratchpad
    _phase: Phase
    _stop_reason: StopReason | None
    _gate: HumanGate
    _children: ChildRequests

    def _publish(self) -> None:
        raise NotImplementedError

    def _on_gate_change(self) -> None:
        raise NotImplementedError

    # -- queries -------------------------------------------------------------------------------

    @workflow.query(name="status")
    def status(self) -> AgentStatus:
        """Where the run is: phase, iteration, usage, pending requests, recent steps."""
        return run_status(
            self._pad,
            phase=self._phase,
            max_iterations=self._params.max_iterations if self._params else 0,
            stop_reason=self._stop_reason,
            pending=self._pending(),
        )

    @workflow.query(name="pending_approvals")
    def pending_approvals(self) -> list[PendingRequest]:
        """Calls waiting for a person (this run's and its sub-agents'), each with the CLI command
        that answers it."""
        return self._pending()

    def _pending(self) -> list[PendingRequest]:
        return [*self._gate.pending.values(), *self._children.visible()]

    # -- decisions from people -----------------------------------------------------------------

    @workflow.signal(name="approve")
    def approve(self, raw: RawValue = NO_INPUT) -> None:
        """`{"call_id": "..."|"*", "args"?: {...}, "args_digest"?, "by"?, "comment"?}`"""
        self._apply("approve", ApproveSignal, raw, self._gate.approve, RequestKind.APPROVAL)

    @workflow.signal(name="reject")
    def reject(self, raw: RawValue = NO_INPUT) -> None:
        """`{"call_id": "..."|"*", "reason"?: "...", "by"?: "..."}`"""
        self._apply("reject", RejectSignal, raw, self._gate.reject, RequestKind.APPROVAL)

    @workflow.signal(name="reply")
    def reply(self, raw: RawValue = NO_INPUT) -> None:
        """`{"call_id": "..."|"*", "text": "...", "by"?: "..."}` answers an `ask_user` question."""
        self._apply("reply", ReplySignal, raw, self._gate.reply, RequestKind.QUESTION)

    @workflow.update(name="decide")
    def decide(self, raw: RawValue = NO_INPUT) -> HumanDecision:
        """`{"call_id", "decision": "approve"|"reject", "args"?, "reason"?, "by"?, "comment"?}`;
        returns the recorded decision."""
        return self.take_decision(raw)

    def take_decision(self, raw: Any) -> HumanDecision:
        """`decide`'s work (also called by a session for its inline turn)."""
        update = parse_or_refuse(DecideUpdate, raw, "decide input", DECISION_REFUSED)
        try:
            if self._children.route(update.call_id):
                return self._children.forward_decide(update)
            return self._gate.decide(update)
        except approvals.DecisionRefused as error:
            refuse(str(error), DECISION_REFUSED)

    @decide.validator
    def validate_decide(self, raw: RawValue = NO_INPUT) -> None:
        """Refuse before anything enters history: unknown/decided ids, bad edited args, ..."""
        update = parse_or_refuse(DecideUpdate, raw, "decide input", DECISION_REFUSED)
        try:
            if self._children.route(update.call_id):
                self._children.check_decide(update)
            else:
                self._gate.check(update)
        except approvals.DecisionRefused as error:
            refuse(str(error), DECISION_REFUSED)

    @workflow.update(name="edit_plan")
    def edit_plan(self, raw: RawValue = NO_INPUT) -> HumanDecision:
        """`{"steps": [{"goal": "...", "tools"?: [...]}], "by"?}`: replace the plan waiting for
        approval and approve it; refused (nothing enters history) if malformed or if no plan
        waits."""
        return self.take_plan_edit(raw)

    def take_plan_edit(self, raw: Any) -> HumanDecision:
        """`edit_plan`'s work (also called by a session for its inline turn)."""
        edit, request = self._plan_edit(raw)
        return self._gate.decide(
            DecideUpdate(
                call_id=request.call_id,
                decision="approve",
                args=plan_args(edit),
                by=edit.by,
            )
        )

    @edit_plan.validator
    def validate_edit_plan(self, raw: RawValue = NO_INPUT) -> None:
        self._plan_edit(raw)

    def _plan_edit(self, raw: Any) -> tuple[EditPlan, PendingRequest]:
        edit = parse_or_refuse(EditPlan, raw, "edit_plan input", DECISION_REFUSED)
        waiting = [p for p in self._gate.pending.values() if p.kind is RequestKind.PLAN]
        if not waiting:
            refuse("no plan is waiting for approval", DECISION_REFUSED)
        return edit, waiting[0]

    @workflow.signal(name=CHILD_PENDING_SIGNAL)
    def child_pending(self, raw: RawValue = NO_INPUT) -> None:
        """From a sub-agent: its calls waiting for a person, shown and answered here."""
        report = parse_or_ignore(ChildPending, raw, CHILD_PENDING_SIGNAL)
        if report is not None and self._children.update(report):
            self._on_gate_change()

    # -- steering ------------------------------------------------------------------------------

    @workflow.signal(name="steer")
    def steer_signal(self, raw: RawValue = NO_INPUT) -> None:
        """`{"text": "...", "by"?: "..."}`: a message the model sees at its next call."""
        steer = parse_or_ignore(SteerMessage, raw, "steer")
        if steer is None or self._phase in ("done", "cancelled"):
            return
        refusal = steering_refusal(self._pad, steer)
        if refusal is not None:
            workflow.logger.warning("signal steer ignored: %s", refusal)
            return
        self._pad = steered(self._pad, steer)
        self._publish()

    @workflow.update(name="steer")
    def steer(self, raw: RawValue = NO_INPUT) -> list[SteerMessage]:
        """Like the signal, but refused when it cannot apply; returns what is queued."""
        return self.take_steer(raw)

    def take_steer(self, raw: Any) -> list[SteerMessage]:
        """`steer`'s work (also called by a session for its inline turn)."""
        self._pad = steered(self._pad, self._steer_message(raw))
        self._publish()
        return self._pad.steering

    @steer.validator
    def validate_steer(self, raw: RawValue = NO_INPUT) -> None:
        self._steer_message(raw)

    def _steer_message(self, raw: Any) -> SteerMessage:
        """The message `raw` holds, or a refusal: malformed, the run has ended, the queue is
        full."""
        steer = parse_or_refuse(SteerMessage, raw, "steer input", STEER_REFUSED)
        if self._phase in ("done", "cancelled"):
            refuse(f"the run has ended ({self._phase}); nothing can be steered", STEER_REFUSED)
        refusal = steering_refusal(self._pad, steer)
        if refusal is not None:
            refuse(refusal, STEER_REFUSED)
        return steer

    def _apply(
        self,
        name: str,
        model: type[SignalT],
        raw: Any,
        apply: Callable[[SignalT], object],
        kind: WaitKind,
    ) -> None:
        """Apply a signal (forwarding it to the sub-agents whose calls it names); one that
        cannot apply is logged and ignored, never failing the run."""
        signal = parse_or_ignore(model, raw, name)
        if signal is None:
            return
        call_id = getattr(signal, "call_id", "")
        if self._children.forward(name, signal, call_id, kind):
            return
        try:
            apply(signal)
        except approvals.DecisionRefused as error:
            if call_id != ALL_PENDING or not self._children.waiting_for(kind):
                workflow.logger.warning("signal %s ignored: %s", name, error)
