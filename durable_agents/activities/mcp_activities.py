"""The MCP activities: `list_mcp_tools`, and one dynamic activity that runs every
`<server>__<tool>` call (so history and the Web UI show an activity named for the tool).

A call's MCP result becomes a `ToolOutput`: text content joined with newlines, other content
(image, audio, resources) as a short placeholder naming its type, cut to `max_output_chars`. A
result flagged `isError`, or a call the server refuses, fails the activity as a non-retryable
`ToolError` whose message the model reads. A crash or a timeout of the server fails it as a
retryable `McpServerUnavailable` / `McpServerTimeout`, and the next attempt starts the server
again. See contracts/mcp.py for every error type.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)
from temporalio import activity
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from durable_agents.activities.heartbeat import with_heartbeats
from durable_agents.activities.mcp_servers import (
    McpServers,
    ServerStartError,
    ServerTimeoutError,
    ServerUnavailableError,
    ToolCallError,
    UnknownServerError,
)
from durable_agents.contracts.errors import TOOL_ERROR
from durable_agents.contracts.mcp import (
    MCP_LIST_TOOLS_ACTIVITY,
    MCP_SERVER_FAILED,
    MCP_SERVER_TIMEOUT,
    MCP_SERVER_UNAVAILABLE,
    UNKNOWN_MCP_SERVER,
    McpCallRequest,
    McpListRequest,
    McpToolList,
    McpToolSpec,
    qualified_tool_name,
)
from durable_agents.contracts.tool_io import ToolOutput
from durable_agents.loop.observations import truncate_observation

T = TypeVar("T")

TIMEOUT_MARGIN_SECONDS = 0.5
"""A call's own deadline comes this long before the activity's start-to-close timeout, so a hung
server is noticed (and restarted) by the worker rather than only timed out by the server."""


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def render_content(block: Any) -> str:
    """One content block as the model reads it: text as is, anything else as a placeholder."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        return f"[{block.type} content: {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if isinstance(block, ResourceLink):
        kind = f", {block.mime_type}" if block.mime_type else ""
        return f"[resource link: {block.uri}{kind}]"
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        kind = f", {resource.mime_type}" if resource.mime_type else ""
        if isinstance(resource, BlobResourceContents):
            size = f"{_decoded_size(resource.blob)} bytes"
        else:
            size = f"{len(resource.text)} chars"
        return f"[embedded resource: {resource.uri}{kind}, {size}]"
    kind = getattr(block, "type", None) or type(block).__name__
    return f"[{kind} content]"


def render_result(result: CallToolResult) -> str:
    """A tool's result as text: its content blocks joined with newlines; without content, its
    structured content as JSON."""
    if result.content:
        return "\n".join(render_content(block) for block in result.content)
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    return ""


def _heartbeat_every() -> float:
    timeout = activity.info().heartbeat_timeout
    return min(1.0, timeout.total_seconds() / 4) if timeout else 1.0


def _deadline_seconds(started: float) -> float | None:
    """What is left of the activity's start-to-close timeout, less a margin."""
    limit = activity.info().start_to_close_timeout
    if not limit:
        return None
    left = limit.total_seconds() - (time.monotonic() - started) - TIMEOUT_MARGIN_SECONDS
    return max(0.1, left)


def _application_error(error: Exception) -> ApplicationError:
    """A manager error as the `ApplicationError` the workflow matches on."""
    if isinstance(error, UnknownServerError):
        return ApplicationError(str(error), type=UNKNOWN_MCP_SERVER, non_retryable=True)
    if isinstance(error, ServerStartError):
        return ApplicationError(str(error), type=MCP_SERVER_FAILED, non_retryable=True)
    if isinstance(error, ServerTimeoutError):
        return ApplicationError(str(error), type=MCP_SERVER_TIMEOUT)
    if isinstance(error, ServerUnavailableError):
        return ApplicationError(str(error), type=MCP_SERVER_UNAVAILABLE)
    return ApplicationError(str(error), type=TOOL_ERROR, non_retryable=True)


async def _guarded(work: Awaitable[T]) -> T:
    """Await `work` with heartbeats; manager errors become `ApplicationError`s."""
    try:
        return await with_heartbeats(work, _heartbeat_every())
    except (
        UnknownServerError,
        ServerStartError,
        ServerTimeoutError,
        ServerUnavailableError,
        ToolCallError,
    ) as error:
        raise _application_error(error) from None


class McpActivities:
    """The MCP activities of one worker, over its `McpServers`."""

    def __init__(self, servers: McpServers) -> None:
        self.servers = servers

    @activity.defn(name=MCP_LIST_TOOLS_ACTIVITY)
    async def list_mcp_tools(self, request: McpListRequest) -> McpToolList:
        """List the tools of the requested servers (every configured one when None)."""
        names = self.servers.names if request.servers is None else list(request.servers)
        self._refuse_unknown(names)
        started = time.monotonic()
        tools: list[McpToolSpec] = []
        for name in names:
            listed = await _guarded(
                self.servers.list_tools(name, timeout=_deadline_seconds(started))
            )
            timeout = self.servers.config(name).timeout
            tools += [spec.model_copy(update={"timeout_seconds": timeout}) for spec in listed]
        activity.logger.info(
            "listed %d MCP tools of %s", len(tools), ", ".join(names) or "no servers"
        )
        return McpToolList(tools=tools, servers=names)

    @activity.defn(dynamic=True)
    async def call_mcp_tool(self, args: Sequence[RawValue]) -> ToolOutput:
        """Run a `<server>__<tool>` call (every activity type this worker does not know
        otherwise comes here, so other types are refused)."""
        activity_type = activity.info().activity_type
        request = self._request(activity_type, args)
        started = time.monotonic()
        result = await _guarded(
            self.servers.call_tool(
                request.server, request.tool, request.args, timeout=_deadline_seconds(started)
            )
        )
        text = render_result(result)
        if result.is_error:
            message, _ = truncate_observation(
                text or f"{activity_type} failed without a message", request.max_output_chars
            )
            activity.logger.info("MCP tool %s call %s: error", activity_type, request.call_id)
            raise ApplicationError(message, type=TOOL_ERROR, non_retryable=True)
        content, truncated = truncate_observation(text, request.max_output_chars)
        activity.logger.info(
            "MCP tool %s call %s finished in %d ms: %d chars%s",
            activity_type,
            request.call_id,
            int((time.monotonic() - started) * 1000),
            len(text),
            " (truncated)" if truncated else "",
        )
        return ToolOutput(content=content, truncated=truncated, original_chars=len(text))

    def _request(self, activity_type: str, args: Sequence[RawValue]) -> McpCallRequest:
        """The call's input, checked against the activity type it came as."""
        if "__" not in activity_type:
            raise ApplicationError(
                f"activity type {activity_type!r} is not registered on this worker "
                "(nor an MCP call, <server>__<tool>)",
                type="NotFoundError",
                non_retryable=True,
            )
        try:
            if len(args) != 1:
                raise ValueError(f"expected one argument, got {len(args)}")
            request = activity.payload_converter().from_payload(args[0].payload, McpCallRequest)
        except Exception as error:
            raise ApplicationError(
                f"{activity_type}: the input is not an McpCallRequest: {error}",
                type=TOOL_ERROR,
                non_retryable=True,
            ) from None
        assert isinstance(request, McpCallRequest)
        if qualified_tool_name(request.server, request.tool) != activity_type:
            raise ApplicationError(
                f"activity type {activity_type!r} does not match its input "
                f"(server {request.server!r}, tool {request.tool!r})",
                type=TOOL_ERROR,
                non_retryable=True,
            )
        self._refuse_unknown([request.server], f"{activity_type}: ")
        return request

    def _refuse_unknown(self, names: Sequence[str], prefix: str = "") -> None:
        """A server name this worker has no configuration for fails the activity for good,
        naming the servers it does have."""
        unknown = [name for name in names if name not in self.servers.servers]
        if unknown:
            configured = ", ".join(self.servers.names) or "none"
            raise ApplicationError(
                f"{prefix}unknown MCP server {', '.join(repr(n) for n in unknown)} "
                f"(configured on this worker: {configured})",
                type=UNKNOWN_MCP_SERVER,
                non_retryable=True,
            )


def mcp_activities(servers: McpServers) -> list[Callable[..., Any]]:
    """The activities to register on the main worker."""
    mcp = McpActivities(servers)
    return [mcp.list_mcp_tools, mcp.call_mcp_tool]
