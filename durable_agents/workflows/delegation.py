"""Sub-agents as child workflows, from the parent's side.

A call of an agent profile starts a child `AgentWorkflow` (id `<parent id>/<profile>-<call id>`,
its own run in the Web UI, linked from the parent) with the profile's instructions, tools and
limits, the parent's approval policy (delegating never gets around a `deny` or an `ask`), what
is left of the parent's budgets, and one more level of nesting. Cancelling the parent cancels
its children.

A child reports its calls waiting for a person to its parent (signal `child_pending`); the
parent shows them in `pending_approvals` and `status` under ids `<profile>-<call id>/<child's
call id>` and forwards `approve` / `reject` / `reply` / `decide` to the child.

A child publishes its events on its own stream; the parent's stream names it
(`subagent_started`, `subagent_finished` with `child_workflow_id`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError, is_cancelled_exception
from temporalio.workflow import ChildWorkflowCancellationType, ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from durable_agents.contracts.agent_input import AgentInput, inherited_settings
    from durable_agents.contracts.agent_result import AgentResult, StopReason
    from durable_agents.contracts.agents import (
        CHILD_PENDING_SIGNAL,
        AgentProfile,
        ChildPending,
        DelegateArgs,
        ParentLink,
    )
    from durable_agents.contracts.approvals import (
        ALL_PENDING,
        DecideUpdate,
        HumanDecision,
        PendingRequest,
        WaitKind,
    )
    from durable_agents.contracts.budgets import CostBudget
    from durable_agents.contracts.events import SubagentFinished, SubagentStarted
    from durable_agents.contracts.mcp import MCP_TOOL_SEPARATOR
    from durable_agents.contracts.model_io import ToolSchema
    from durable_agents.contracts.request_kind import RequestKind
    from durable_agents.contracts.scratchpad import Scratchpad
    from durable_agents.contracts.usage import TokenUsage
    from durable_agents.loop import approvals
    from durable_agents.loop.event_views import event_text
    from durable_agents.loop.search_attributes import tenant_memo
    from durable_agents.workflows.callees.activity import failure_detail
    from durable_agents.workflows.makers import check_approver, countersigned
    from durable_agents.workflows.run_events import RunEvents
    from durable_agents.workflows.session_link import run_scope

KEY_SEPARATOR = "/"
"""Between a child's key and the child's own call id in the ids shown at the parent."""

CHILD_CANCEL_PATCH = "child-run-keeps-cancel"
"""Runs that took it await their child runs through `child_result`, which keeps a cancel that
comes with a child's end; histories recorded before it replay awaiting the child directly."""


def agent_tool_schema(profile: AgentProfile) -> ToolSchema:
    """What the model is told about an agent profile: a tool taking a task."""
    parameters = DelegateArgs.model_json_schema()
    parameters.pop("title", None)
    return ToolSchema(name=profile.name, description=profile.description, parameters=parameters)


def child_input(
    params: AgentInput, pad: Scratchpad, profile: AgentProfile, task: str, link: ParentLink
) -> AgentInput:
    """The child run's input: the parent's settings (`inherited_settings`: model timeouts and
    attempts, fallback models, context settings, MCP servers, approval policy and timeouts,
    memory scope, ...), with what the profile names (instructions, tools, agents, model, turn
    limit, answer schema), what is left of the parent's budgets, and one more level of nesting.

    MCP servers are inherited only where the profile lets the child reach them: a profile with
    no tool list gets every tool, its parent's servers' too; a profile that lists tools gets
    the MCP tools it names (`<server>__<tool>`, as a plan step's do) and no others."""
    tokens_left = (
        max(1, params.max_total_tokens - pad.usage.total_tokens)
        if params.max_total_tokens is not None
        else None
    )
    if profile.max_total_tokens is not None:
        tokens_left = min(tokens_left or profile.max_total_tokens, profile.max_total_tokens)
    budget = params.cost_budget
    cost_left = (
        CostBudget(max_usd=max(0.0, budget.max_usd - (pad.cost_usd or 0.0)), prices=budget.prices)
        if budget is not None
        else None
    )
    tools = profile.tools
    names_mcp = tools is not None and any(MCP_TOOL_SEPARATOR in name for name in tools)
    mcp_servers = params.mcp_servers if tools is None or names_mcp else None
    return AgentInput(
        **{
            **inherited_settings(params),
            "prompt": task,
            "system_prompt": profile.system_prompt,
            "tools": tools,
            "mcp_servers": mcp_servers,
            "agents": profile.agents or None,
            "model": profile.model or params.model,
            "model_call": profile.model_call or params.model_call,
            "max_iterations": profile.max_iterations,
            "max_total_tokens": tokens_left,
            "cost_budget": cost_left,
            "output_schema": profile.output_schema,
            "depth": params.depth + 1,
            "parent": link,
        }
    )


@dataclass(frozen=True)
class Delegated:
    """What a child run came back with: the observation, whether it failed, what it spent."""

    observation: str
    failed: bool
    usage: TokenUsage
    cost_usd: float | None
    workflow_id: str
    stop_reason: StopReason | None = None
    """Why the child's loop stopped (None: it failed, or never ran)."""
    iterations: int = 0
    """The child's model turns (0: it failed, or never ran)."""

    @property
    def answered(self) -> bool:
        """The child ran and its answer is its own (not a limit's stop text)."""
        return not self.failed and self.stop_reason is not None and self.stop_reason.answered


async def run_child(
    params: AgentInput,
    pad: Scratchpad,
    profile: AgentProfile,
    task: str,
    call_id: str,
    children: ChildRequests,
) -> Delegated:
    """Run `profile` on `task` as a child workflow; its answer (or typed output) is the
    observation, a failure an `Error: ...` one. While it runs, `children` takes its reports of
    calls waiting for a person (and no one else's under its key)."""
    key = f"{profile.name}-{call_id}"
    child_id = f"{run_scope(params)}/{key}"
    events = children.events
    events.emit(SubagentStarted, call_id=call_id, agent=profile.name, child_workflow_id=child_id)
    try:
        done = await _run_child(params, pad, profile, task, key, children)
    finally:
        children.forget(key)
    events.emit(
        SubagentFinished,
        call_id=call_id,
        agent=profile.name,
        child_workflow_id=done.workflow_id,
        stop_reason=done.stop_reason,
        answer=event_text(done.observation),
    )
    return done


async def _run_child(
    params: AgentInput,
    pad: Scratchpad,
    profile: AgentProfile,
    task: str,
    key: str,
    children: ChildRequests,
) -> Delegated:
    """The child run of `run_child`, under the key `key`: refused past `max_agent_depth`; a
    child that fails is an `Error: ...` observation."""
    parent_id = workflow.info().workflow_id
    child_id = f"{run_scope(params)}/{key}"
    if params.depth + 1 > params.max_agent_depth:
        return Delegated(
            f"Error: agents may nest {params.max_agent_depth} deep and this call would be "
            f"deeper; do the task yourself.",
            True,
            TokenUsage(),
            None,
            child_id,
        )
    token = workflow.uuid4().hex
    link = ParentLink(workflow_id=parent_id, call_key=key, token=token)
    children.expect(key, child_id, token)
    keeps_cancel = workflow.patched(CHILD_CANCEL_PATCH)
    try:
        child = await workflow.start_child_workflow(
            "AgentWorkflow",
            child_input(params, pad, profile, task, link),
            id=child_id,
            result_type=AgentResult,
            parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
            cancellation_type=ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
            static_summary=f"{profile.name}: {task[:200]}",
            memo=tenant_memo(params.tenant),
        )
        result = await (child_result(child) if keeps_cancel else child)
    except ChildWorkflowError as error:
        if is_cancelled_exception(error):
            raise
        detail = failure_detail(error)
        return Delegated(
            f"Error: the {profile.name} agent failed: {detail}", True, TokenUsage(), None, child_id
        )
    return child_answer(profile, result, child_id)


async def child_result(child: workflow.ChildWorkflowHandle[Any, AgentResult]) -> AgentResult:
    """The child run's result; if this run is cancelled meanwhile, the child is cancelled
    (unless it has ended), waited for, and the cancel raised here.

    Why not `await child`: temporalio (1.35) hands a task that awaits a child the child's
    result when the cancel and the child's end come in one workflow task, and clears the
    cancel (`_await_temporal_operation`, `uncancel`): the run went on as if never cancelled
    (and a child that had failed or been terminated got a cancel command its state machine
    refuses, failing the workflow task for good). Through `asyncio.shield` the cancel reaches
    this task instead, and an ended child is left alone."""
    try:
        return await asyncio.shield(child)
    except asyncio.CancelledError:
        # (no command) once this activation's callbacks have run, a result that came with
        # the cancel has reached `child`
        await workflow.wait_condition(lambda: True)
        if not child.done():
            child.cancel()
        await asyncio.wait([child])  # ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED
        raise


def child_answer(profile: AgentProfile, result: AgentResult, child_id: str) -> Delegated:
    """What a child run that ended gives its parent: its answer (or typed output, as JSON),
    marked when it stopped early."""
    observation = result.answer if result.output is None else json.dumps(result.output)
    if not result.stop_reason.answered:
        observation = (
            f"[the {profile.name} agent stopped early: {result.stop_reason}]\n{observation}"
        )
    return Delegated(
        observation,
        False,
        result.usage,
        result.cost_usd,
        child_id,
        result.stop_reason,
        result.iterations,
    )


async def signal_parent(link: ParentLink, report: ChildPending) -> None:
    """Tell the parent run which of this run's calls wait for a person."""
    await signal_child(link.workflow_id, CHILD_PENDING_SIGNAL, report)


async def signal_child(workflow_id: str, name: str, payload: Any) -> None:
    """Forward a decision; a child that has ended meanwhile is not an error of this run."""
    try:
        await workflow.get_external_workflow_handle(workflow_id).signal(name, payload)
    except Exception as error:
        workflow.logger.warning("could not forward %s to %s: %s", name, workflow_id, error)


async def forward_signed(workflow_id: str, name: str, payload: dict[str, Any]) -> None:
    """Forward a decision to a child, its verified maker signed for the child
    (`workflows.makers.countersigned`)."""
    await signal_child(workflow_id, name, await countersigned(workflow_id, name, payload))


class ChildRequests:
    """The calls of this run's children that wait for a person, shown here and answered here
    (decisions are forwarded to the child as signals)."""

    def __init__(self, events: RunEvents | None = None) -> None:
        self.events = events or RunEvents.off()
        """The run's event stream (its sub-agents are announced on it)."""
        self._children: dict[str, ChildPending] = {}
        self._started: dict[str, tuple[str, str]] = {}
        self._sequences: dict[str, int] = {}
        self._background: set[asyncio.Task[None]] = set()
        self.starter: str | None = None
        """The run's starter (its input's), whom the two-person rule keeps from approving a
        guarded call of its children too."""

    def expect(self, call_key: str, workflow_id: str, token: str) -> None:
        """This run started child `workflow_id` under `call_key` with `token`: only its
        reports are taken, until `forget`."""
        self._started[call_key] = (workflow_id, token)

    def forward(self, name: str, signal: BaseModel, call_id: str, kind: WaitKind) -> bool:
        """Forward a decision signal to the children it names; True when it named only
        children (so this run has nothing to apply). `*` goes to every child waiting for
        `kind`, and still applies here too.

        An approval is bound to what this run shows: each forwarded approval names one call
        with the digest of the arguments shown here (computed here, never taken from the
        report), so a child whose real pending call differs refuses it; `*` is sent as one
        approval per call shown, and `*` with edited arguments only when one call is shown."""
        payload = signal.model_dump(exclude_none=True)
        targets = self.forwards(call_id, kind)
        if name == "approve" and targets:
            shown = self._shown(call_id, kind)
            bound = approvals.bound_approvals(
                payload, [(inner, request.args_digest) for _, inner, request in shown]
            )
            if bound is None:
                workflow.logger.warning(
                    "signal approve not forwarded: edited args need one call_id (%d calls of "
                    "sub-agents wait)",
                    len(shown),
                )
                return False
            for (child, _, _), approval in zip(shown, bound, strict=True):
                self._spawn(forward_signed(child, name, approval))
        else:
            for child, inner in targets:
                self._spawn(forward_signed(child, name, {**payload, "call_id": inner}))
        return bool(targets) and call_id != ALL_PENDING

    def _shown(self, call_id: str, kind: WaitKind) -> list[tuple[str, str, PendingRequest]]:
        """(child workflow id, the child's call id, the request as shown) for each shown call
        a decision naming `call_id` applies to."""
        return [
            (report.workflow_id, request.call_id, request)
            for key, report in self._children.items()
            for request in report.pending
            if request.kind == kind
            and (call_id == ALL_PENDING or call_id == f"{key}{KEY_SEPARATOR}{request.call_id}")
        ]

    def check_decide(self, update: DecideUpdate) -> PendingRequest:
        """The child request a `decide` update names, or `DecisionRefused` saying why not."""
        request = self.find(update.call_id)
        if request is None:
            raise approvals.DecisionRefused(f"no pending call {update.call_id!r}")
        if request.kind is not RequestKind.APPROVAL:
            raise approvals.DecisionRefused(f"call {update.call_id!r} is a question: reply to it")
        approvals.check_digest(request, update.args_digest)
        if update.decision == "approve":
            check_approver(request, request.approval, self.starter, update.by, update.maker)
        return request

    def forward_decide(self, update: DecideUpdate) -> HumanDecision:
        """Forward a `decide` update to the child as the signal of the same decision; returns
        the decision as the child will record it (the child checks edited arguments again)."""
        request = self.check_decide(update)
        name = "approve" if update.decision == "approve" else "reject"
        self.forward(name, approvals.as_signal(update), update.call_id, RequestKind.APPROVAL)
        now = workflow.now()
        if update.decision == "approve":
            return approvals.approved(
                request,
                now=now,
                edited_args=update.args,
                by=update.by,
                comment=update.comment,
                digest=update.args_digest,
                maker=update.maker,
            )
        return approvals.rejected(
            request, now=now, reason=update.reason, by=update.by, maker=update.maker
        )

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def forget(self, call_key: str) -> None:
        """The child ended: nothing of it waits any more, and nothing more is taken from it."""
        self._children.pop(call_key, None)
        self._started.pop(call_key, None)
        self._sequences.pop(call_key, None)

    def update(self, report: ChildPending) -> bool:
        """Take a child's report of its pending calls; False (ignored, logged) unless it comes
        from a running child this run started, with the token it was given."""
        started = self._started.get(report.call_key)
        if started is None or started != (report.workflow_id, report.token):
            workflow.logger.warning(
                "signal %s ignored: %s is not a running sub-agent of this run under %r",
                CHILD_PENDING_SIGNAL,
                report.workflow_id,
                report.call_key,
            )
            return False
        if report.sequence:
            if report.sequence <= self._sequences.get(report.call_key, 0):
                return False  # an older report that arrived late: the child has moved on
            self._sequences[report.call_key] = report.sequence
        if report.pending:
            pending = approvals.as_shown(report.pending)
            self._children[report.call_key] = report.model_copy(update={"pending": pending})
        else:
            self._children.pop(report.call_key, None)
        return True

    def visible(self) -> list[PendingRequest]:
        """Each child's pending requests under this run's ids, with commands aimed here."""
        parent_id = workflow.info().workflow_id
        shown = []
        for key, report in self._children.items():
            for request in report.pending:
                call_id = f"{key}{KEY_SEPARATOR}{request.call_id}"
                command = approvals.answer_command(parent_id, request.kind, call_id)
                shown.append(request.model_copy(update={"call_id": call_id, "command": command}))
        return shown

    def find(self, call_id: str) -> PendingRequest | None:
        return next((r for r in self.visible() if r.call_id == call_id), None)

    def route(self, call_id: str) -> tuple[str, str] | None:
        """(child workflow id, the child's own call id) for an id that names a child's call."""
        key, separator, inner = call_id.partition(KEY_SEPARATOR)
        report = self._children.get(key)
        if not separator or report is None:
            return None
        return report.workflow_id, inner

    def waiting_for(self, kind: WaitKind) -> Iterable[str]:
        """Children with at least one request of `kind` (for `*`)."""
        return [
            report.workflow_id
            for report in self._children.values()
            if any(r.kind == kind for r in report.pending)
        ]

    def forwards(self, call_id: str, kind: WaitKind) -> list[tuple[str, str]]:
        """Where a decision naming `call_id` goes: `[(child workflow id, call id there)]`."""
        if call_id == ALL_PENDING:
            return [(child, ALL_PENDING) for child in self.waiting_for(kind)]
        routed = self.route(call_id)
        return [routed] if routed else []
