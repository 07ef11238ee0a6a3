"""What a run may call, decided once at its start: the worker's own tools (filtered by the
run's allowlist, its memory scope and its output schema), the tools of the MCP servers it asked
for (listed by an activity, so the list is in history and replay sees the same one), and a check
that its approval policy is allowed on this worker.

Agent profiles the run may hand work to are offered as tools too (see `workflows.delegation`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_input import AgentInput
    from durable_agents.contracts.errors import INVALID_INPUT
    from durable_agents.contracts.mcp import (
        MCP_LIST_TOOLS_ACTIVITY,
        MCP_SERVER_FAILED,
        MCP_TOOL_SEPARATOR,
        UNKNOWN_MCP_SERVER,
        McpListRequest,
        McpToolList,
        McpToolSpec,
    )
    from durable_agents.contracts.model_io import ToolSchema
    from durable_agents.contracts.policy import WORKER_POLICY_ACTIVITY, WorkerPolicy
    from durable_agents.loop.client_tools import client_tools_problem
    from durable_agents.loop.input_validation import outside_tools_problem
    from durable_agents.loop.output import (
        STOP_TOOLS_REPLACED_BY_OUTPUT,
        OutputSpec,
        final_result_tool,
    )
    from durable_agents.loop.policy import overridden_approvals
    from durable_agents.loop.tool_requests import ArgsSchema
    from durable_agents.tools.definition import Tool
    from durable_agents.workflows.callees.activity import failure_detail
    from durable_agents.workflows.callees.agent_profile import AgentCallee
    from durable_agents.workflows.callees.client_tool import ClientTool
    from durable_agents.workflows.callees.code_mode import CodeMode
    from durable_agents.workflows.callees.local_tool import LocalTool
    from durable_agents.workflows.callees.mcp_tool import McpTool
    from durable_agents.workflows.callees.protocol import Callee
    from durable_agents.workflows.callees.recorded_tool import recorded_callees
    from durable_agents.workflows.refusals import refuse
    from durable_agents.workflows.worker_catalog import worker_catalog

if TYPE_CHECKING:
    from durable_agents.workflows.human_gate import HumanGate
    from durable_agents.workflows.tool_round import ToolRound

RoundFor = Callable[[Sequence[Callee]], "ToolRound"]
"""Makes a round of tools over some callees (code mode runs a script's calls in one)."""


@dataclass(frozen=True)
class RunTools:
    """The run's callees (`workflows.callees`) and what the model is told about them."""

    callees: list[Callee]
    schemas: list[ToolSchema]
    unavailable: dict[str, str]
    """Why registered tools the run does not offer cannot be called (a clearer observation
    than "unknown tool" when the model calls one anyway)."""
    inner: list[Callee] = field(default_factory=list)
    """Callees reached only through another (a code-mode script's tools)."""

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.callees]

    @property
    def outside_schemas(self) -> dict[str, ArgsSchema]:
        """Argument schemas of the callees the worker does not define (for edited approvals)."""
        callees = [*self.callees, *self.inner]
        return {c.name: c.args_schema for c in callees if c.definition is None}


async def prepare_tools(
    params: AgentInput,
    output: OutputSpec | None,
    gate: HumanGate | None = None,
    rounds: RoundFor | None = None,
) -> RunTools:
    """The run's callees: local tools, MCP tools, agent profiles, client tools (waiting in
    `gate`); and `final_result` for a typed answer (offered to the model, answered by the loop
    itself). In code mode the model is offered `run_code` alone, whose scripts call the others
    in rounds made by `rounds`."""
    tools = local_tools(params, output)
    mcp_tools = await list_mcp_tools(params)
    await check_policy(params, tools)  # after the listing: recorded runs replay in this order
    callees: list[Callee] = [
        *(LocalTool(t) for t in tools),
        *(McpTool(s) for s in mcp_tools),
        *(AgentCallee(p) for p in worker_catalog().agents.select(params.agents or [])),
    ]
    if params.client_tools and gate is not None:
        problem = client_tools_problem(params.client_tools, [c.name for c in callees])
        if problem:
            refuse(f"invalid AgentWorkflow input: {problem}", INVALID_INPUT)
        callees.extend(ClientTool(spec, gate) for spec in params.client_tools)
    callees = recorded_callees(callees, params.tool_fixtures)  # an eval: nothing runs
    inner: list[Callee] = []
    if params.code_mode and rounds is not None:
        code = CodeMode(callees, params.code_limits, rounds)
        inner, callees = code.callees, [code]
    schemas = [c.schema() for c in callees]
    if output is not None and output.mode == "tool":
        schemas.append(final_result_tool(output))
    offered = {t.name for t in tools}
    unavailable = {
        t.name: f"Error: {t.name} is only available to runs with a memory_scope; this run "
        "has none, so nothing can be remembered or recalled."
        for t in worker_catalog().tools.all()
        if t.options.requires_scope and t.name not in offered
    }
    return RunTools(callees, schemas, unavailable, inner)


def local_tools(params: AgentInput, output: OutputSpec | None) -> list[Tool]:
    """The worker's tools the run may use. Tools that keep data per user need the run's
    `memory_scope`. With an output schema the run ends through `final_result`, so stop tools
    that end it with free text are left out."""
    tools = worker_catalog().tools.select(params.tools)
    if params.memory_scope is None:
        asked = [t.name for t in tools if t.options.requires_scope and params.tools is not None]
        if asked:
            refuse(
                f"invalid AgentWorkflow input: tools: {', '.join(asked)} keep data per user "
                "and need memory_scope (whose memories to use)",
                INVALID_INPUT,
            )
        tools = [t for t in tools if not t.options.requires_scope]
    if output is not None:
        tools = [t for t in tools if t.name not in STOP_TOOLS_REPLACED_BY_OUTPUT]
    return tools


async def list_mcp_tools(params: AgentInput) -> list[McpToolSpec]:
    """The tools of the MCP servers the run asked for (none unless it asked). A server's tool
    may not take a local tool's name."""
    if not params.mcp_servers:
        return []
    tools = await _mcp_listing(params.mcp_servers)
    named = [t for t in params.tools or [] if MCP_TOOL_SEPARATOR in t]
    if named:  # an allowlist that names MCP tools offers those alone
        missing = [t for t in named if t not in {s.qualified_name for s in tools}]
        if missing:
            refuse(
                f"invalid AgentWorkflow input: tools: the MCP servers have no tool(s) "
                f"{', '.join(missing)}",
                INVALID_INPUT,
            )
        tools = [s for s in tools if s.qualified_name in named]
    catalog = worker_catalog()
    problem = outside_tools_problem(
        [*catalog.tools.names(), *catalog.agents.names()], [s.qualified_name for s in tools]
    )
    if problem:
        refuse(f"invalid AgentWorkflow input: {problem}", INVALID_INPUT)
    return tools


async def _mcp_listing(mcp_servers: list[str]) -> list[McpToolSpec]:
    """Every tool of the MCP servers named (`*`: all the worker's), listed by an activity; a
    server that cannot list them fails the run."""
    servers = None if mcp_servers == ["*"] else mcp_servers
    try:
        listing = await workflow.execute_activity(
            MCP_LIST_TOOLS_ACTIVITY,
            McpListRequest(servers=servers),
            result_type=McpToolList,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(
                maximum_attempts=3,
                non_retryable_error_types=[UNKNOWN_MCP_SERVER, MCP_SERVER_FAILED],
            ),
            summary=f"list the tools of MCP servers: {', '.join(mcp_servers)}",
        )
    except ActivityError as error:
        if is_cancelled_exception(error):
            raise
        cause = error.cause
        detail = failure_detail(error)
        kind = cause.type if isinstance(cause, ApplicationError) else None
        raise ApplicationError(
            f"mcp_servers: the tools could not be listed: {detail}",
            type=kind or MCP_SERVER_FAILED,
            non_retryable=True,
        ) from error
    return listing.tools


async def check_policy(params: AgentInput, tools: Sequence[Tool]) -> None:
    """A policy that would `auto`-run tools whose definition requires approval needs the
    worker's permission (asked by an activity, so the answer is in history)."""
    overridden = overridden_approvals(params.approval_policy, tools)
    if not overridden:
        return
    allowed = await workflow.execute_activity(
        WORKER_POLICY_ACTIVITY,
        result_type=WorkerPolicy,
        start_to_close_timeout=timedelta(seconds=30),
        summary="may this run auto-approve?",
    )
    if not allowed.allow_run_auto_approve:
        refuse(
            "invalid AgentWorkflow input: approval_policy: would run "
            f"{', '.join(overridden)} without the approval its definition requires; the "
            "worker does not allow that (set ALLOW_RUN_AUTO_APPROVE=true on the worker)",
            INVALID_INPUT,
        )
