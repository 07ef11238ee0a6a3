"""`McpTool`: a tool of an outside MCP server, run as an activity named `<server>__<tool>` on
the worker that holds the server (`activities.mcp_activities`)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.mcp import McpCallRequest, McpToolSpec
    from durable_agents.contracts.model_io import ToolSchema
    from durable_agents.loop.summaries import shorten, tool_call_summary
    from durable_agents.loop.tool_requests import ArgsSchema
    from durable_agents.tools.definition import ToolOptions
    from durable_agents.workflows.callees.activity import (
        activity_result,
        failed_result,
        run_activity,
    )
    from durable_agents.workflows.callees.protocol import CallContext, CallResult, PlainCallee

DEFAULT_MCP_TIMEOUT = timedelta(seconds=60)
"""An attempt's limit for a server with no `timeout` of its own in the worker's MCP config."""
MCP_TIMEOUT_MARGIN = timedelta(seconds=5)
"""Beyond the server's own timeout: the activity gives the worker time to notice a hung server
(its deadline comes first) and to answer."""


def mcp_tool_options(spec: McpToolSpec) -> ToolOptions:
    """How a server's tool is run: per attempt, the server's configured `timeout` (plus a
    margin) or a minute; transient failures retried."""
    if spec.timeout_seconds is None:
        return ToolOptions(start_to_close_timeout=DEFAULT_MCP_TIMEOUT)
    return ToolOptions(
        start_to_close_timeout=timedelta(seconds=spec.timeout_seconds) + MCP_TIMEOUT_MARGIN
    )


def mcp_tool_schema(spec: McpToolSpec) -> ToolSchema:
    """What the model is told about an MCP server's tool: its qualified name, the server's
    description and the server's own JSON schema of the arguments."""
    return ToolSchema(
        name=spec.qualified_name,
        description=spec.description or f"{spec.name} (from MCP server {spec.server})",
        parameters=spec.input_schema or {"type": "object", "properties": {}},
    )


class McpTool(PlainCallee):
    """A `Callee` for one tool of one MCP server."""

    def __init__(self, spec: McpToolSpec) -> None:
        self._spec = spec
        self._options = mcp_tool_options(spec)

    @property
    def name(self) -> str:
        return self._spec.qualified_name

    @property
    def options(self) -> ToolOptions:
        return self._options

    @property
    def args_schema(self) -> ArgsSchema:
        return self._spec.input_schema

    def schema(self) -> ToolSchema:
        return mcp_tool_schema(self._spec)

    async def invoke(self, context: CallContext) -> CallResult:
        spec = self._spec
        request = McpCallRequest(
            server=spec.server,
            tool=spec.name,
            args=context.args,
            call_id=context.call.id,
            idempotency_key=context.idempotency_key,
            max_output_chars=context.params.max_observation_chars,
        )
        summary = shorten(f"{spec.server} · {spec.name} {tool_call_summary(context.args)}")
        try:
            return activity_result(await run_activity(self.name, self._options, request, summary))
        except ActivityError as error:
            return failed_result(self.name, self._options, error)
