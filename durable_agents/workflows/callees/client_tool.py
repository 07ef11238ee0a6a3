"""`ClientTool`: a tool the run's client declared and runs itself (`client_tools` in the input).

A call records a pending request of kind `client_tool` in the run's `HumanGate` (listed by
`pending_approvals` with the command that answers it) and waits durably for the client's
`tool_result` update, with the approval timeout rules (the run's `approval_timeout_seconds` and
`approval_timeout_action`; `fail` fails the run with `HumanWaitTimedOut`). Nothing runs on the
worker. The run's approval policy applies first, in `ToolRound`, as for every callee.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.approvals import HumanDecision
    from durable_agents.contracts.client_tools import (
        CLIENT_TOOL_REFUSED,
        CLIENT_TOOL_RESULT_UPDATE,
        ClientToolSpec,
        ToolResultUpdate,
    )
    from durable_agents.contracts.model_io import ToolSchema
    from durable_agents.contracts.request_kind import RequestKind
    from durable_agents.loop import approvals, client_tools
    from durable_agents.loop.tool_requests import ArgsSchema
    from durable_agents.workflows.callees.protocol import CallContext, CallResult, PlainCallee
    from durable_agents.workflows.human_gate import HumanGate
    from durable_agents.workflows.refusals import parse_or_refuse, refuse


class ClientTool(PlainCallee):
    """A `Callee` for one client-side tool."""

    def __init__(self, spec: ClientToolSpec, gate: HumanGate) -> None:
        self._spec = spec
        self._gate = gate
        gate.result_schemas[spec.name] = spec.result_schema

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def args_schema(self) -> ArgsSchema:
        return self._spec.parameters

    def schema(self) -> ToolSchema:
        return client_tools.client_tool_schema(self._spec)

    async def invoke(self, context: CallContext) -> CallResult:
        seconds, action = approvals.wait_limits(
            self.options,
            context.params.approval_timeout_seconds,
            context.params.approval_timeout_action,
        )
        workflow_id = workflow.info().workflow_id
        request = client_tools.answerable(
            approvals.open_request(
                kind=RequestKind.CLIENT_TOOL,
                workflow_id=workflow_id,
                call_id=context.call.id,
                tool=self.name,
                args=context.args,
                now=workflow.now(),
                timeout_seconds=seconds,
                on_timeout=action,
            ),
            workflow_id,
        )
        workflow.logger.info(
            "client tool %s %s waits for the client: %s", self.name, request.call_id,
            request.command,
        )  # fmt: skip
        decision = await self._gate.wait_or_fail(request)
        text, failed = client_tools.observation(request, decision)
        return CallResult(text, "error" if failed else "ok")


def record_tool_result(
    gate: HumanGate, specs: dict[str, ClientToolSpec], raw: Any, *, check_only: bool
) -> HumanDecision | None:
    """The `tool_result` update on `gate`: refused (a non-retryable error naming the problem,
    so nothing enters history when it is the validator) or recorded, freeing the waiting call."""
    update = parse_or_refuse(
        ToolResultUpdate, raw, f"{CLIENT_TOOL_RESULT_UPDATE} input", CLIENT_TOOL_REFUSED
    )
    try:
        request = client_tools.check_result(update, gate.pending, specs)
    except approvals.DecisionRefused as error:
        refuse(str(error), CLIENT_TOOL_REFUSED)
    if check_only:
        return None
    return gate.record(client_tools.answered(request, update, now=workflow.now()))
