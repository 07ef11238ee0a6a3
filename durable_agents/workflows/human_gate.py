"""`HumanGate`: the calls of one run that wait for a person, and the decisions that free them.

Workflow-side only (it uses `workflow.now()` and `workflow.wait_condition`); every decision rule
lives in the pure functions of `loop.approvals`. Waiting is a durable condition: it can last
days, survives worker restarts, and costs nothing while it waits.

A decision that names a call not pending yet is kept (`early`, at most
`approvals.MAX_EARLY_DECISIONS`) and applied when that call comes to wait, if it still fits it
(the kind, the digest, edited arguments): a worker killed just after a model reply can have shown
the call to a person from a workflow task it never committed, and the next worker then gets the
decision and the reply in one workflow task, the signal first (docs/fleet.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.approvals import (
        ApproveSignal,
        DecideUpdate,
        HumanDecision,
        PendingRequest,
        RejectSignal,
        ReplySignal,
    )
    from durable_agents.contracts.errors import HUMAN_WAIT_TIMED_OUT
    from durable_agents.contracts.events import (
        ApprovalDecided,
        ApprovalRequested,
        ClientToolRequested,
        QuestionAnswered,
        QuestionAsked,
    )
    from durable_agents.contracts.policy import ApprovalPolicy
    from durable_agents.contracts.principals import DecisionMaker
    from durable_agents.contracts.request_kind import RequestKind
    from durable_agents.loop import approvals
    from durable_agents.loop.event_views import decision_of, event_text
    from durable_agents.loop.policy import matching_rule
    from durable_agents.loop.tool_requests import ArgsSchema
    from durable_agents.runtime.telemetry_workflow import approval_span
    from durable_agents.workflows.makers import check_approver
    from durable_agents.workflows.run_events import RunEvents


class HumanGate:
    """Pending requests by call id, and the decisions taken on them."""

    def __init__(
        self,
        arg_models: Mapping[str, ArgsSchema],
        on_change: Callable[[], None],
        events: RunEvents | None = None,
    ):
        self.pending: dict[str, PendingRequest] = {}
        self.decisions: dict[str, HumanDecision] = {}
        self.early: dict[str, approvals.EarlySignal] = {}
        """Decisions that named a call before it was pending, by call id (oldest first)."""
        self._arg_models = dict(arg_models)
        self._on_change = on_change
        self._events = events or RunEvents.off()
        self.result_schemas: dict[str, dict[str, Any] | None] = {}
        """The `result_schema` of each client tool, which `client_tool_requested` carries."""
        self.policy: ApprovalPolicy | None = None
        self.starter: str | None = None
        """The run's approval policy and starter (its input's): the two-person rule."""

    def add_schemas(self, schemas: Mapping[str, ArgsSchema]) -> None:
        """Argument schemas of tools known only once the run started (an MCP server's), so
        edited arguments of their calls can be checked."""
        self._arg_models.update(schemas)

    async def wait(self, request: PendingRequest) -> HumanDecision:
        """Record `request` and wait for its decision or its expiry (both published on the
        run's event stream: `approval_requested` / `question_asked`, then `approval_decided` /
        `question_answered`, before the call goes on)."""
        self.decisions.pop(request.call_id, None)  # a call approved, then sent to its client
        request = self._with_requirement(request)
        self.pending[request.call_id] = request
        self._emit_request(request)
        self._take_early(request)
        self._on_change()
        with approval_span(request) as decided:  # (no command: replays alike either way)
            await self._until_decided(request)
            decided(self.decisions[request.call_id])
        self.pending.pop(request.call_id, None)
        self._emit_decision(request, self.decisions[request.call_id])
        self._on_change()
        return self.decisions[request.call_id]

    async def _until_decided(self, request: PendingRequest) -> None:
        """Wait for `request`'s decision, or record its timeout."""
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

    def _emit_request(self, request: PendingRequest) -> None:
        if request.kind is RequestKind.CLIENT_TOOL:  # its answer ends in `tool_call_finished`
            self._events.emit(
                ClientToolRequested,
                call_id=request.call_id,
                tool=request.tool,
                arguments=request.args,
                result_schema=self.result_schemas.get(request.tool),
            )
            return
        if request.kind is RequestKind.QUESTION:
            question = request.question or str(request.args.get("question", ""))
            self._events.emit(QuestionAsked, call_id=request.call_id, question=question)
            return
        self._events.emit(
            ApprovalRequested,
            call_id=request.call_id,
            kind=request.kind,
            tool=request.tool,
            arguments=request.args,
            digest=request.args_digest,
            repeat_of=request.repeat_of,
            timeout_seconds=(request.expires_at - request.requested_at).total_seconds()
            if request.expires_at is not None
            else None,
        )

    def _emit_decision(self, request: PendingRequest, decision: HumanDecision) -> None:
        if request.kind is RequestKind.CLIENT_TOOL:
            return
        if request.kind is RequestKind.QUESTION and decision.outcome == "answered":
            self._events.emit(
                QuestionAnswered,
                call_id=request.call_id,
                reply=event_text(decision.reply),
                by=decision.by,
            )
            return
        self._events.emit(
            ApprovalDecided,
            call_id=request.call_id,
            decision=decision_of(decision),
            by=decision.by,
            comment=decision.comment or decision.reason,
        )

    async def wait_or_fail(self, request: PendingRequest) -> HumanDecision:
        """`wait`, and fail the run (`HumanWaitTimedOut`) when the request timed out and its
        timeout action is `fail`."""
        decision = await self.wait(request)
        if decision.outcome == "timed_out" and decision.timeout_action == "fail":
            raise ApplicationError(
                f"{request.kind} for {request.tool} ({request.call_id}) timed out after "
                f"{approvals.waited_seconds(request):g}s and the timeout action is 'fail'",
                type=HUMAN_WAIT_TIMED_OUT,
                non_retryable=True,
            )
        return decision

    # -- decisions ---------------------------------------------------------------------------

    def approve(self, signal: ApproveSignal) -> list[HumanDecision]:
        """Approve the calls `signal` names (none yet when it is kept for a call not pending)."""
        if self._keep_early(signal):
            return []
        return [self._record(decision) for decision in self._approvals(signal)]

    def reject(self, signal: RejectSignal) -> list[HumanDecision]:
        if self._keep_early(signal):
            return []
        return [self._record(decision) for decision in self._rejections(signal)]

    def reply(self, signal: ReplySignal) -> HumanDecision | None:
        if self._keep_early(signal):
            return None
        return self._record(self._answer(signal))

    def _keep_early(self, signal: approvals.EarlySignal) -> bool:
        """Keep a decision naming one call that is neither pending nor decided (see the module
        docstring); False: it applies now, or is refused now."""
        if not approvals.is_early(signal.call_id, self.pending, self.decisions):
            return False
        self.early = approvals.keep_early(self.early, signal)
        workflow.logger.info(
            "decision %s for call %s kept: the call is not pending yet",
            type(signal).__name__,
            signal.call_id,
        )
        return True

    def _take_early(self, request: PendingRequest) -> None:
        """Apply the decision kept for `request`'s call, if there is one and it fits."""
        signal = self.early.pop(request.call_id, None)
        if signal is None:
            return
        try:
            decisions = self._decisions_of(signal)
        except approvals.DecisionRefused as error:
            workflow.logger.warning(
                "kept decision for call %s not applied: %s", request.call_id, error
            )
            return
        for decision in decisions:
            self._record(decision)

    def _decisions_of(self, signal: approvals.EarlySignal) -> list[HumanDecision]:
        if isinstance(signal, ApproveSignal):
            return self._approvals(signal)
        if isinstance(signal, RejectSignal):
            return self._rejections(signal)
        return [self._answer(signal)]

    def _approvals(self, signal: ApproveSignal) -> list[HumanDecision]:
        targets = approvals.select_targets(signal.call_id, self.pending, RequestKind.APPROVAL)
        if signal.args is not None and len(targets) > 1:
            raise approvals.DecisionRefused("edited args need one call_id, not '*'")
        checked = []
        for request in targets:
            self._check_approver(request, signal.by, signal.maker)
            approvals.check_digest(request, signal.args_digest)
            edited = approvals.check_edited_args(
                request, signal.args, self._arg_models.get(request.tool)
            )
            checked.append((request, edited))
        return [
            approvals.approved(
                request,
                now=workflow.now(),
                edited_args=edited,
                by=signal.by,
                comment=signal.comment,
                digest=signal.args_digest,
                maker=signal.maker,
            )
            for request, edited in checked
        ]

    def _rejections(self, signal: RejectSignal) -> list[HumanDecision]:
        targets = approvals.select_targets(signal.call_id, self.pending, RequestKind.APPROVAL)
        return [
            approvals.rejected(
                request, now=workflow.now(), reason=signal.reason, by=signal.by, maker=signal.maker
            )
            for request in targets
        ]

    def _answer(self, signal: ReplySignal) -> HumanDecision:
        [request] = approvals.select_targets(signal.call_id, self.pending, RequestKind.QUESTION)
        return approvals.answered(
            request, now=workflow.now(), text=signal.text, by=signal.by, maker=signal.maker
        )

    def check(self, update: DecideUpdate) -> None:
        """Raise `DecisionRefused` if `update` cannot apply (used by the update's validator)."""
        if update.call_id == "*":
            raise approvals.DecisionRefused("decide takes one call_id; '*' is for the signals")
        [request] = approvals.select_targets(update.call_id, self.pending, RequestKind.APPROVAL)
        approvals.check_digest(request, update.args_digest)
        if update.decision == "approve":
            self._check_approver(request, update.by, update.maker)
            approvals.check_edited_args(request, update.args, self._arg_models.get(request.tool))
        elif update.args is not None:
            raise approvals.DecisionRefused("args can only be given with decision 'approve'")

    def _with_requirement(self, request: PendingRequest) -> PendingRequest:
        """`request` naming who may approve it, when the run's policy says (shown to people
        and to the servers, which check the approver's role)."""
        rule = matching_rule(self.policy, request.tool)
        if rule is None or rule.approval is None or request.kind is not RequestKind.APPROVAL:
            return request
        return request.model_copy(update={"approval": rule.approval})

    def _check_approver(
        self, request: PendingRequest, by: str | None, maker: DecisionMaker | None
    ) -> None:
        """The two-person rule: the run's starter cannot approve a call its policy guards, nor
        can a self-declared approver (`maker` as `workflows.makers.believed` left it)."""
        rule = matching_rule(self.policy, request.tool)
        requirement = rule.approval if rule is not None else None
        check_approver(request, requirement, self.starter, by, maker)

    def decide(self, update: DecideUpdate) -> HumanDecision:
        self.check(update)
        [decision] = self._decisions_of(approvals.as_signal(update))  # (pending: `check`)
        return self._record(decision)

    def record(self, decision: HumanDecision) -> HumanDecision:
        """Record a decision taken elsewhere (a client's `tool_result`), freeing its call."""
        return self._record(decision)

    def _record(self, decision: HumanDecision) -> HumanDecision:
        self.decisions[decision.call_id] = decision
        self.pending.pop(decision.call_id, None)
        workflow.logger.info(
            "decision on %s: %s by %s", decision.call_id, decision.outcome, decision.by or "?"
        )
        return decision
