"""MCP servers the MCP tests talk to, besides `mcp-server-time` from PyPI:

- `web`: a small server made with the SDK's `MCPServer` (FastMCP), served over streamable HTTP
  by uvicorn in a thread on a free 127.0.0.1 port (`HttpMcpServer`);
- `slow`: run as a script (`python tests/mcp_test_servers.py [--quiet-stderr]`), a stdio server
  whose tool takes as long as it is told, to kill or time out a server in the middle of a call.
"""

from __future__ import annotations

import base64
import os
import socket
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import AudioContent, EmbeddedResource, ImageContent, TextContent
from mcp_types import TextResourceContents as TextResource
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

SCRIPT = Path(__file__).resolve()
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def web_server() -> MCPServer:
    server = MCPServer("web-test")

    @server.tool()
    def echo(text: str) -> str:
        """Say `text` back."""
        return text

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails with `reason`."""
        raise ToolError(reason)

    @server.tool()
    def chart() -> list[TextContent | ImageContent | AudioContent | EmbeddedResource]:
        """A caption, a PNG, a sound and an embedded text resource."""
        return [
            TextContent(text="Sales by month:"),
            ImageContent(data=base64.b64encode(PNG).decode(), mime_type="image/png"),
            AudioContent(
                data=base64.b64encode(b"RIFF" + bytes(96)).decode(), mime_type="audio/wav"
            ),
            EmbeddedResource(
                resource=TextResource(uri="file:///notes.txt", mime_type="text/plain", text="hi")
            ),
            TextContent(text="(source: test)"),
        ]

    @server.tool()
    def big(chars: int) -> str:
        """`chars` characters of numbered lines."""
        lines = (f"line {i:06d}" for i in range(chars // 12 + 1))
        return "\n".join(lines)[:chars]

    @server.custom_route("/not-mcp", methods=["GET", "POST", "DELETE"])
    async def not_mcp(request: Request) -> Response:
        """A plain web page where an MCP endpoint is expected."""
        return PlainTextResponse("<html>hello, this is not MCP</html>", status_code=200)

    return server


class _HeaderLog:
    """ASGI middleware: keeps the headers of every HTTP request, then hands it on."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.headers: list[dict[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


class HttpMcpServer:
    """`web_server()` over streamable HTTP at `url`, in a thread, while in the `with`; `headers`
    holds the headers of every HTTP request it received."""

    def __init__(self) -> None:
        import uvicorn

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.base_url = f"http://127.0.0.1:{port}"
        self._log = _HeaderLog(web_server().streamable_http_app())
        config = uvicorn.Config(self._log, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def headers(self) -> list[dict[str, str]]:
        return list(self._log.headers)

    def __enter__(self) -> HttpMcpServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the test MCP HTTP server did not start")
            time.sleep(0.01)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


def slow_server() -> MCPServer:
    server = MCPServer("slow-test")

    @server.tool()
    async def wait(seconds: float) -> str:
        """Sleep `seconds`, then say so."""
        await anyio.sleep(seconds)
        return f"waited {seconds:g}s"

    return server


if __name__ == "__main__":  # the stdio `slow` server
    if "--quiet-stderr" in sys.argv:  # lives on with its stderr closed, as some servers do
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    slow_server().run("stdio")
    sys.exit(0)
