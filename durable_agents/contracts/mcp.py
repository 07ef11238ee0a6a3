"""What the workflow and the worker exchange about MCP tool servers.

The worker reads the servers from `MCP_CONFIG` (activities/mcp_servers.py). A run asks
`list_mcp_tools` for their tools once (the answer lands in history), offers each to the model as
`<server>__<tool>`, and schedules each call as an activity of that type (so the Web UI shows an
activity named for the tool) with a `McpCallRequest` as input and a `contracts.tool_io.ToolOutput`
as result. A failed call's `ApplicationError` type tells what happened:

| type | retryable | meaning |
| --- | --- | --- |
| `contracts.errors.TOOL_ERROR` | no | the tool answered `isError`, or the server refused the call |
| `UnknownMcpServer` | no | the server is not configured on this worker |
| `McpServerFailed` | no | the server could not start (or be reached at first contact) |
| `McpServerUnavailable` | yes | the server crashed or its connection broke; restarted next time |
| `McpServerTimeout` | yes | the server did not answer in time; restarted next time |
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

MCP_LIST_TOOLS_ACTIVITY = "list_mcp_tools"
"""Activity type of the listing: `McpListRequest` in, `McpToolList` out."""

MCP_TOOL_SEPARATOR = "__"
"""Between the server's name and its tool's name in a qualified name and an activity type."""

UNKNOWN_MCP_SERVER = "UnknownMcpServer"
MCP_SERVER_FAILED = "McpServerFailed"
MCP_SERVER_UNAVAILABLE = "McpServerUnavailable"
MCP_SERVER_TIMEOUT = "McpServerTimeout"


def qualified_tool_name(server: str, tool: str) -> str:
    """The name the model sees and the call's activity type: `<server>__<tool>`."""
    return f"{server}{MCP_TOOL_SEPARATOR}{tool}"


class McpToolSpec(BaseModel):
    """One tool of one MCP server, as the server describes it."""

    server: str
    name: str
    """The tool's name on its server."""
    description: str
    input_schema: dict[str, Any]
    """The server's JSON schema of the tool's arguments."""
    timeout_seconds: float | None = None
    """The server's `timeout` in the worker's MCP config (None: not set): a call's activity is
    given that long per attempt."""

    @property
    def qualified_name(self) -> str:
        return qualified_tool_name(self.server, self.name)


class McpListRequest(BaseModel):
    servers: list[str] | None = None
    """The servers whose tools to list; None: every server configured on the worker."""


class McpToolList(BaseModel):
    tools: list[McpToolSpec]
    servers: list[str]
    """The servers listed, in order."""


class McpCallRequest(BaseModel):
    """Input of a `<server>__<tool>` activity."""

    server: str
    tool: str
    args: dict[str, Any]
    call_id: str
    idempotency_key: str
    max_output_chars: int = 20_000
