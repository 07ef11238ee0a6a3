"""Client-side tools as pure functions: whether the declared tools can join the run, what the
model is told, the pending request and the command that answers it, whether a `tool_result`
can apply, what it records, and what the model reads."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from jsonschema import Draft202012Validator

from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.client_tools import (
    CLIENT_TOOL_RESULT_UPDATE,
    MAX_CLIENT_RESULT_BYTES,
    ClientToolSpec,
    ToolResultUpdate,
)
from durable_agents.contracts.model_io import ToolSchema
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.loop import approvals
from durable_agents.loop.output import describe, schema_problem


def client_tools_problem(specs: Sequence[ClientToolSpec], taken: Iterable[str]) -> str | None:
    """Why the declared client tools cannot join the run, naming the tool; or None: each
    schema must be a valid JSON Schema and no name may be one the run already has (a worker
    tool, an MCP tool, an agent profile)."""
    for spec in specs:
        for field, schema in (
            ("parameters", spec.parameters),
            ("result_schema", spec.result_schema),
        ):
            problem = schema_problem(schema) if schema is not None else None
            if problem:
                return f"client_tools: {spec.name}: {field} is not a valid JSON Schema: {problem}"
    names = set(taken)
    clashes = [s.name for s in specs if s.name in names]
    if clashes:
        return (
            f"client_tools: {', '.join(clashes)} would take the name of a tool the run already has"
        )
    return None


def client_tool_schema(spec: ClientToolSpec) -> ToolSchema:
    """What the model is told about a client tool: the client's own description and schema."""
    return ToolSchema(name=spec.name, description=spec.description, parameters=spec.parameters)


def answer_command(workflow_id: str, call_id: str) -> str:
    """The Temporal CLI command that answers a pending client tool call."""
    payload = {"call_id": call_id, "result": "..."}
    return (
        f"temporal workflow update execute --workflow-id {shlex.quote(workflow_id)} "
        f"--name {CLIENT_TOOL_RESULT_UPDATE} --input {shlex.quote(json.dumps(payload))}"
    )


def answerable(request: PendingRequest, workflow_id: str) -> PendingRequest:
    """A client tool call's pending record (`approvals.open_request` of kind `client_tool`)
    with the command that answers it: the `tool_result` update, not an approval signal."""
    return request.model_copy(update={"command": answer_command(workflow_id, request.call_id)})


def check_result(
    update: ToolResultUpdate,
    pending: Mapping[str, PendingRequest],
    specs: Mapping[str, ClientToolSpec],
) -> PendingRequest:
    """The pending client tool call `update` answers, or `DecisionRefused` naming the problem:
    an unknown or answered call, a call that is not a client tool's, a result too large or
    breaking the tool's `result_schema`."""
    if update.call_id == "*":
        raise approvals.DecisionRefused("tool_result takes one call_id, not '*'")
    [request] = approvals.select_targets(update.call_id, pending, RequestKind.CLIENT_TOOL)
    if update.failed:
        return request
    size = len(json.dumps(update.result, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_CLIENT_RESULT_BYTES:
        raise approvals.DecisionRefused(
            f"the result has {size} bytes as JSON; the most is {MAX_CLIENT_RESULT_BYTES}"
        )
    spec = specs.get(request.tool)
    schema = spec.result_schema if spec is not None else None
    if schema is not None:
        errors = sorted(
            Draft202012Validator(schema).iter_errors(update.result), key=lambda e: list(e.path)
        )
        if errors:
            listed = "; ".join(describe(e) for e in errors[:10])
            raise approvals.DecisionRefused(
                f"the result for {request.tool} ({request.call_id}) does not match its "
                f"result_schema: {listed}"
            )
    return request


def result_text(result: Any) -> str:
    """A client's result as the model reads it: a string as it is, anything else as JSON."""
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, sort_keys=True)


def answered(request: PendingRequest, update: ToolResultUpdate, *, now: datetime) -> HumanDecision:
    """The record of the client's answer: its result (`reply`, as text) or its error
    (`reason`)."""
    return HumanDecision(
        call_id=request.call_id,
        kind=request.kind,
        outcome="answered",
        by=update.by,
        at=now,
        reply=None if update.failed else result_text(update.result),
        reason=update.error if update.failed else None,
        model_args=request.args,
    )


def observation(request: PendingRequest, decision: HumanDecision) -> tuple[str, bool]:
    """What the model reads for a client tool call, and whether it is an error: the client's
    result, its error, or that the client did not answer in time (never that it refused)."""
    if decision.outcome == "answered":
        if decision.reason is not None:
            return f"Error: the client could not run {request.tool}: {decision.reason}", True
        return decision.reply or "", False
    seconds = f"{approvals.waited_seconds(request):g}s"
    if decision.timeout_action == "approve":
        return (
            f"The client did not run {request.tool} within {seconds}; continue without its result.",
            False,
        )
    return f"Error: the client did not run {request.tool} within {seconds}; no result.", True
