"""`HumanGate`: the calls of one run that wait for a person, and the decisions that free them.

Workflow-side only (it uses `workflow.now()` and `workflow.wait_condition`); every decision rule
lives in the pure functions of `loop.approvals`. Waiting is a durable condition: it can last
days, survives worker restarts, and costs nothing while it waits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.approvals import (
        ApproveSignal,
        DecideUpdate,
        HumanDecision,
        PendingRequest,
        RejectSignal,
        ReplySignal,
    )
    from contracts.request_kind import RequestKind
    from loop import approvals
    from loop.tool_requests import ArgsSchema


class HumanGate:
    """Pending requests by call id, and the decisions taken on them."""

    def __init__(self, arg_models: Mapping[str, ArgsSchema], on_change: Callable[[], None]):
        self.pending: dict[str, PendingRequest] = {}
        self.decisions: dict[str, HumanDecision] = {}
        self._arg_models = dict(arg_models)
        self._on_change = on_change

    def add_schemas(self, schemas: Mapping[str, ArgsSchema]) -> None:
        """Argument schemas of tools known only once the run started (an MCP server's), so
        edited arguments of their calls can be checked."""
        self._arg_models.update(schemas)

    async def wait(self, request: PendingRequest) -> HumanDecision:
        """Record `request` and wait for its decision or its expiry."""
        self.pending[request.call_id] = request
        self._on_change()
        timeout = (
            (request.expires_at - request.requested_at) if request.expires_at is not None else None
        )
        try:
            await workflow.wait_condition(
                lambda: request.call_id in self.decisions,
                timeout=timeout if timeout is None else max(timeout, timedelta(milliseconds=1)),
                timeout_summary=f"{request.kind} timeout for {request.tool} {request.call_id}",
            )
        except TimeoutError:
            self.decisions[request.call_id] = approvals.timed_out(request, now=workflow.now())
            workflow.logger.info(
                "%s for %s (%s) timed out; action: %s",
                request.kind,
                request.tool,
                request.call_id,
                request.on_timeout,
            )
        self.pending.pop(request.call_id, None)
        self._on_change()
        return self.decisions[request.call_id]

    # -- decisions ---------------------------------------------------------------------------

    def approve(self, signal: ApproveSignal) -> list[HumanDecision]:
        targets = approvals.select_targets(signal.call_id, self.pending, RequestKind.APPROVAL)
        if signal.args is not None and len(targets) > 1:
            raise approvals.DecisionRefused("edited args need one call_id, not '*'")
        checked = []
        for request in targets:
            approvals.check_digest(request, signal.args_digest)
            edited = approvals.check_edited_args(
                request, signal.args, self._arg_models.get(request.tool)
            )
            checked.append((request, edited))
        return [
            self._record(
                approvals.approved(
                    request,
                    now=workflow.now(),
                    edited_args=edited,
                    by=signal.by,
                    comment=signal.comment,
                )
            )
            for request, edited in checked
        ]

    def reject(self, signal: RejectSignal) -> list[HumanDecision]:
        targets = approvals.select_targets(signal.call_id, self.pending, RequestKind.APPROVAL)
        return [
            self._record(
                approvals.rejected(request, now=workflow.now(), reason=signal.reason, by=signal.by)
            )
            for request in targets
        ]

    def reply(self, signal: ReplySignal) -> HumanDecision:
        [request] = approvals.select_targets(signal.call_id, self.pending, RequestKind.QUESTION)
        return self._record(
            approvals.answered(request, now=workflow.now(), text=signal.text, by=signal.by)
        )

    def check(self, update: DecideUpdate) -> None:
        """Raise `DecisionRefused` if `update` cannot apply (used by the update's validator)."""
        if update.call_id == "*":
            raise approvals.DecisionRefused("decide takes one call_id; '*' is for the signals")
        [request] = approvals.select_targets(update.call_id, self.pending, RequestKind.APPROVAL)
        approvals.check_digest(request, update.args_digest)
        if update.decision == "approve":
            approvals.check_edited_args(request, update.args, self._arg_models.get(request.tool))
        elif update.args is not None:
            raise approvals.DecisionRefused("args can only be given with decision 'approve'")

    def decide(self, update: DecideUpdate) -> HumanDecision:
        self.check(update)
        signal = approvals.as_signal(update)
        if isinstance(signal, ApproveSignal):
            [decision] = self.approve(signal)
        else:
            [decision] = self.reject(signal)
        return decision

    def _record(self, decision: HumanDecision) -> HumanDecision:
        self.decisions[decision.call_id] = decision
        self.pending.pop(decision.call_id, None)
        workflow.logger.info(
            "decision on %s: %s by %s", decision.call_id, decision.outcome, decision.by or "?"
        )
        return decision
