"""Live connections to the worker's MCP servers, through the official `mcp` SDK.

A connection is opened on first use and reused by every later call: a stdio server's process
is started once, and stopped (stdin closed, then SIGTERM, then SIGKILL to its process group, as
the SDK does) when the manager closes, which the worker does after its activities have drained.
A connection that breaks (the process died, the HTTP server went away) or that times out is
dropped, so the next use starts the server again.

Each connection lives in a task of its own: the SDK's transports are anyio task groups, which
must be entered and left by the same task, while activities use the client from theirs.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack
from typing import IO, Any, cast

import anyio
import httpx2
from pydantic import ValidationError

from durable_agents.activities.mcp_config import McpServerConfig, StdioServerConfig
from durable_agents.contracts.mcp import McpToolSpec
from durable_agents.runtime.extras import MissingExtra

try:  # the `mcp` extra: without it, importing this module says so in one line
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult, Implementation
except ImportError:
    raise MissingExtra("McpServers (MCP servers as tools)", "mcp") from None

log = logging.getLogger("mcp_servers")

CLIENT_INFO = Implementation(name="durable-agents", version="0.1.0")
CONNECT_TIMEOUT_SECONDS = 30.0
"""Time a server gets to start and answer the MCP handshake."""
CLOSE_TIMEOUT_SECONDS = 10.0
"""Time a connection gets to shut down (the SDK's stdio shutdown takes at most about 6 s)."""
PROBE_TIMEOUT_SECONDS = 2.0
"""Time a server whose stderr closed gets to prove it still answers."""
MAX_LIST_PAGES = 100
STDERR_TAIL_LINES = 20
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
"""The `mcp` SDK's own client defaults (`streamable_http_client` without `http_client`): 30 s
to connect, write and wait for the pool; 300 s to read, as a server may hold a response stream
open. Redirects are left off, as there: the transport follows only those that stay on the
endpoint's origin itself, whatever the client's `follow_redirects` says."""


class McpServerError(Exception):
    """Something went wrong with an MCP server; the message names the server."""


class UnknownServerError(McpServerError, LookupError):
    """The server is not configured on this worker."""


class ServerStartError(McpServerError):
    """The server could not be started or reached; retrying the same way will not help."""


class ServerUnavailableError(McpServerError):
    """A running server's connection broke (the process died, the socket closed)."""


class ServerTimeoutError(McpServerError):
    """The server did not answer in time."""


class ToolCallError(McpServerError):
    """The server refused the call (unknown tool, invalid arguments) or answered nonsense."""


class _StderrPipe:
    """A stdio server's stderr: each line is logged and the last few are kept for error
    messages. Its end of file tells that the process has exited."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self.closed = threading.Event()
        read_fd, write_fd = os.pipe()
        self.writer: IO[str] | None = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb")
        threading.Thread(target=self._read, name=f"mcp-{server}-stderr", daemon=True).start()

    def _read(self) -> None:
        with self._reader:
            for raw in self._reader:
                line = raw.decode("utf-8", errors="replace").rstrip()
                self.tail.append(line)
                log.info("[%s] %s", self.server, line)
        self.closed.set()

    def close_writer(self) -> None:
        """Drop the worker's copy of the write end (the child has its own), so end of file
        comes when the child exits."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def last_lines(self, count: int = 5) -> str:
        lines = [line for line in self.tail if line.strip()]
        return " | ".join(lines[-count:])


def _leaves(error: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups, or the error itself."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _reason(error: BaseException) -> str:
    """Why a connection could not be made, in a few words."""
    leaves = _leaves(error)
    if isinstance(error, BaseExceptionGroup) and leaves:
        error = leaves[0]
    if isinstance(error, FileNotFoundError):
        return f"command not found ({error.filename or error})"
    if isinstance(error, PermissionError):
        return f"command not executable ({error.filename or error})"
    if isinstance(error, MCPError) and error.code == CONNECTION_CLOSED:
        return "the connection closed during the MCP handshake (did the process exit?)"
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _fault_text(error: Exception) -> str:
    """A transport fault in one line: for a line that is not JSON-RPC, what was wrong and the
    start of the line."""
    if isinstance(error, ValidationError) and error.errors():
        first = error.errors()[0]
        seen = str(first.get("input", ""))[:120]
        return f"{first['msg']}: {seen!r}" if seen else str(first["msg"])
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text[:200]}" if text else type(error).__name__


class _Connection:
    """One connection to one server, owned by a task of its own."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.client: Client | None = None
        self.stderr: _StderrPipe | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr_ignored = False
        self.fault: str | None = None
        """The last thing the server sent that was not a valid message (non-JSON, say)."""

    async def alive(self) -> bool:
        """Whether the connection can be used. A stdio process whose stderr has closed has
        most likely exited; a quick request tells for sure (some servers close their stderr
        and live on: then stderr is not looked at again)."""
        if self._task is None or self._task.done() or self.client is None:
            return False
        if self.stderr is None or not self.stderr.closed.is_set() or self._stderr_ignored:
            return True
        try:  # (ping is gone from newer protocol versions; every server lists its tools)
            with anyio.fail_after(PROBE_TIMEOUT_SECONDS):
                await self.client.list_tools()
        except MCPError as error:  # an error answer is an answer
            if error.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                return False
        except Exception:
            return False
        self._stderr_ignored = True
        return True

    async def open(self, timeout: float) -> None:
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(ready), name=f"mcp-{self.config.name}")
        try:
            self.client = await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            await self.close()
            raise ServerStartError(
                self._start_failure(f"no answer to the MCP handshake within {timeout:g}s")
            ) from None
        except asyncio.CancelledError:
            await self.close()
            raise
        except Exception as error:
            await self.close()
            raise ServerStartError(self._start_failure(_reason(error))) from error

    def _start_failure(self, reason: str) -> str:
        config = self.config
        if isinstance(config, StdioServerConfig):
            text = f"MCP server {config.name!r} could not start (command: {config.describe()}): "
        else:
            text = f"MCP server {config.name!r} could not be reached at {config.url}: "
        text += reason
        if self.fault:
            text += f"; it sent something that is not a valid MCP message ({self.fault})"
        if self.stderr is not None:
            self.stderr.closed.wait(0.5)  # the last lines of a process that just exited
            if tail := self.stderr.last_lines():
                text += f"; its stderr ended with: {tail}"
        return text

    async def _own(self, ready: asyncio.Future[Client]) -> None:
        try:
            async with AsyncExitStack() as stack:
                client = await self._connect(stack)
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as error:
            if not ready.done():
                if isinstance(error, asyncio.CancelledError):
                    ready.cancel()
                else:
                    ready.set_exception(error)
            elif not isinstance(error, asyncio.CancelledError):
                log.warning("MCP server %r: connection ended: %s", self.config.name, _reason(error))
            if isinstance(error, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise
        finally:
            if self.stderr is not None:
                self.stderr.close_writer()

    async def _connect(self, stack: AsyncExitStack) -> Client:
        config = self.config
        if isinstance(config, StdioServerConfig):
            self.stderr = _StderrPipe(config.name)
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
            )
            writer = cast(Any, self.stderr.writer)
            transport: Any = stdio_client(params, errlog=writer)
        else:
            # The SDK's public way to set headers: a client of our own, passed as `http_client`.
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=dict(config.headers), timeout=HTTP_TIMEOUT)
            )
            transport = streamable_http_client(config.url, http_client=http)
        client = Client(
            transport, cache=None, client_info=CLIENT_INFO, message_handler=self._on_message
        )
        try:
            await stack.enter_async_context(client)
        finally:
            if self.stderr is not None:
                self.stderr.close_writer()  # the child holds its own copy now
        return client

    async def _on_message(self, message: Any) -> None:
        """The SDK hands transport faults here (a line that is not JSON-RPC, ...)."""
        if isinstance(message, Exception):
            self.fault = _fault_text(message)
            log.warning("MCP server %r sent something unreadable: %s", self.config.name, self.fault)

    def faults(self) -> str:
        """What went wrong on the wire, for an error message ('' if nothing)."""
        text = ""
        if self.fault:
            text += f"; it sent something that is not a valid MCP message ({self.fault})"
        if self.stderr is not None and (tail := self.stderr.last_lines(3)):
            text += f"; its stderr ended with: {tail}"
        return text

    async def close(self) -> None:
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if self.client is None:  # still in the handshake, which does not watch `_stop`
            task.cancel()  # (the SDK still stops the process: its shutdown is shielded)
        done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_SECONDS)
        if not done:
            log.warning("MCP server %r did not shut down in time: cancelling", self.config.name)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class McpServers:
    """The worker's MCP servers by name: connects on first use, reuses, restarts after a
    failure, closes all on exit (`async with McpServers(...)`)."""

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        *,
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
    ) -> None:
        self.servers = dict(servers)
        self.connect_timeout = connect_timeout
        self._connections: dict[str, _Connection] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def names(self) -> list[str]:
        return list(self.servers)

    def config(self, name: str) -> McpServerConfig:
        try:
            return self.servers[name]
        except KeyError:
            configured = ", ".join(self.servers) or "none"
            raise UnknownServerError(
                f"unknown MCP server {name!r} (configured on this worker: {configured})"
            ) from None

    async def __aenter__(self) -> McpServers:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop every server (and wait for connections being dropped)."""
        self._closed = True
        connections = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.close() for c in connections), *self._closing)

    async def _connection(self, name: str) -> _Connection:
        config = self.config(name)
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            if self._closed:
                raise ServerUnavailableError(f"MCP server {name!r}: the worker is shutting down")
            connection = self._connections.get(name)
            if connection is not None and await connection.alive():
                return connection
            if connection is not None:
                log.warning("MCP server %r: connection lost, starting it again", name)
                self._drop(name, connection)
            connection = _Connection(config)
            log.info("MCP server %r: connecting (%s)", name, config.describe())
            await connection.open(self.connect_timeout)
            self._connections[name] = connection
            return connection

    def _drop(self, name: str, connection: _Connection) -> None:
        """Forget a broken connection and shut it down in the background."""
        if self._connections.get(name) is connection:
            del self._connections[name]
        task = asyncio.create_task(connection.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    @contextlib.asynccontextmanager
    async def _using(self, name: str) -> AsyncIterator[Client]:
        """The server's client; transport failures and timeouts drop the connection and come
        out as `ServerUnavailableError` / `ServerTimeoutError`, refusals as `ToolCallError`."""
        connection = await self._connection(name)
        assert connection.client is not None
        try:
            yield connection.client
        except MCPError as error:
            if error.code == REQUEST_TIMEOUT:
                self._drop(name, connection)
                raise ServerTimeoutError(
                    f"MCP server {name!r} did not answer in time: {error.message}"
                    + connection.faults()
                ) from None
            if error.code == CONNECTION_CLOSED:
                self._drop(name, connection)
                raise ServerUnavailableError(self._lost(name, connection)) from None
            raise ToolCallError(f"MCP server {name!r} refused the request: {error}") from None
        except (TimeoutError, httpx2.TimeoutException) as error:
            self._drop(name, connection)
            raise ServerTimeoutError(
                f"MCP server {name!r} did not answer in time: {_reason(error)}"
                + connection.faults()
            ) from None
        except ValidationError as error:
            raise ToolCallError(
                f"MCP server {name!r} sent a malformed answer: {error.error_count()} "
                f"validation error(s), first: {error.errors()[0]['msg']}"
            ) from None
        except (
            httpx2.TransportError,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
            anyio.EndOfStream,
            OSError,
        ) as error:
            self._drop(name, connection)
            raise ServerUnavailableError(
                f"{self._lost(name, connection)}: {_reason(error)}"
            ) from None

    def _lost(self, name: str, connection: _Connection) -> str:
        config = connection.config.describe()
        return f"MCP server {name!r} ({config}): the connection was lost{connection.faults()}"

    async def list_tools(self, name: str, timeout: float | None = None) -> list[McpToolSpec]:
        """Every tool of the server (all pages of its listing)."""
        config = self.config(name)
        timeout = _shortest(timeout, config.timeout)
        tools: list[McpToolSpec] = []
        async with self._using(name) as client:
            cursor: str | None = None
            for _ in range(MAX_LIST_PAGES):
                with anyio.fail_after(timeout):
                    page = await client.list_tools(cursor=cursor)
                tools += [
                    McpToolSpec(
                        server=name,
                        name=tool.name,
                        description=tool.description or tool.title or "",
                        input_schema=tool.input_schema,
                    )
                    for tool in page.tools
                ]
                cursor = page.next_cursor
                if not cursor:
                    break
        return tools

    async def call_tool(
        self, name: str, tool: str, args: dict[str, Any], timeout: float | None = None
    ) -> CallToolResult:
        """Call `tool` of server `name`; the raw MCP result (`is_error` included)."""
        config = self.config(name)
        timeout = _shortest(timeout, config.timeout)
        async with self._using(name) as client:
            return await client.call_tool(tool, args, read_timeout_seconds=timeout)


def _shortest(*timeouts: float | None) -> float | None:
    known = [t for t in timeouts if t is not None]
    return min(known) if known else None
