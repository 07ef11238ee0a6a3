"""The worker's MCP servers, read from the JSON file `MCP_CONFIG` names, in the format Claude
Desktop and Cursor use:

```json
{"mcpServers": {
  "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
  "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ..."}}
}}
```

A server with `command` runs as a child process of the worker, spoken to over stdio (`args`,
`env`, `cwd`); one with `url` is reached over streamable HTTP (`headers`). Both may set
`timeout` (seconds one request may take) and `type` (`stdio`, or `http` / `streamable-http`).
Anything else is refused with an `McpConfigError` naming the server and the field, so a typo
stops the worker at start instead of silently dropping a server. No `mcp` import here: the
worker reads this before it knows whether it needs the SDK.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
"""Server names become the prefix of tool names a model sees (`<server>__<tool>`), so they keep
to the characters every provider accepts in a function name."""

STDIO_KEYS = frozenset({"command", "args", "env", "cwd"})
HTTP_KEYS = frozenset({"url", "headers"})
COMMON_KEYS = frozenset({"type", "timeout"})
TRANSPORT_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http"}


class McpConfigError(ValueError):
    """The MCP config is malformed; the message names the file, the server and the field."""


@dataclass(frozen=True)
class StdioServerConfig:
    """A server the worker starts as a child process and speaks to over stdin/stdout."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """Merged over the few variables the SDK passes on (HOME, PATH, USER, ...), not the
    worker's whole environment."""
    cwd: Path | None = None
    timeout: float | None = None

    @property
    def transport(self) -> str:
        return "stdio"

    def describe(self) -> str:
        """The command line, as a person would type it."""
        return shlex.join([self.command, *self.args])


@dataclass(frozen=True)
class HttpServerConfig:
    """A server reached over streamable HTTP."""

    name: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None

    @property
    def transport(self) -> str:
        return "http"

    def describe(self) -> str:
        return self.url


McpServerConfig = StdioServerConfig | HttpServerConfig


def load_mcp_config(path: Path) -> dict[str, McpServerConfig]:
    """Read and check the file `MCP_CONFIG` names; relative `cwd`s are taken from its folder."""
    source = f"MCP_CONFIG {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise McpConfigError(f"{source}: cannot read it: {error.strerror or error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise McpConfigError(
            f"{source}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None
    return parse_mcp_config(data, source=source, base_dir=path.parent)


def parse_mcp_config(
    data: Any, *, source: str = "MCP config", base_dir: Path | None = None
) -> dict[str, McpServerConfig]:
    """The servers of a decoded config, in the file's order."""
    if not isinstance(data, dict):
        raise McpConfigError(f'{source}: expected a JSON object with "mcpServers"')
    unknown = sorted(set(data) - {"mcpServers"})
    if unknown:
        raise McpConfigError(
            f'{source}: unknown key {unknown[0]!r} (the file holds only "mcpServers")'
        )
    if "mcpServers" not in data:
        raise McpConfigError(f'{source}: "mcpServers" is missing')
    servers = data["mcpServers"]
    if not isinstance(servers, dict):
        raise McpConfigError(f'{source}: "mcpServers" must be an object of servers by name')
    return {
        name: _server(name, entry, source=source, base_dir=base_dir)
        for name, entry in servers.items()
    }


def _server(name: str, entry: Any, *, source: str, base_dir: Path | None) -> McpServerConfig:
    if not SERVER_NAME.match(name) or "__" in name:
        raise McpConfigError(
            f"{source}: server name {name!r}: use letters, digits, '-' and '_' (not '__'); "
            "it prefixes the tool names the model sees"
        )
    where = f"{source}: server {name!r}"
    if not isinstance(entry, dict):
        raise McpConfigError(f'{where}: expected an object with "command" or "url"')
    allowed = STDIO_KEYS | HTTP_KEYS | COMMON_KEYS
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise McpConfigError(
            f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )
    if "command" in entry and "url" in entry:
        raise McpConfigError(f'{where}: has both "command" (stdio) and "url" (HTTP); keep one')
    if "command" not in entry and "url" not in entry:
        raise McpConfigError(
            f'{where}: needs "command" (a stdio server) or "url" (a streamable HTTP server)'
        )
    kind = "stdio" if "command" in entry else "http"
    if "type" in entry:
        declared = TRANSPORT_TYPES.get(entry["type"]) if isinstance(entry["type"], str) else None
        if declared is None:
            raise McpConfigError(
                f'{where}: "type" {entry["type"]!r} is not supported '
                f"(use {', '.join(repr(t) for t in TRANSPORT_TYPES)})"
            )
        if declared != kind:
            needs = '"command"' if declared == "stdio" else '"url"'
            raise McpConfigError(f'{where}: "type" {entry["type"]!r} needs {needs}')
    misplaced = sorted(set(entry) & (HTTP_KEYS if kind == "stdio" else STDIO_KEYS))
    if misplaced:
        owner = '"url" (HTTP)' if kind == "stdio" else '"command" (stdio)'
        raise McpConfigError(f"{where}: {misplaced[0]!r} is only for servers with {owner}")
    timeout = _timeout(entry.get("timeout"), where)
    if kind == "http":
        url = entry["url"]
        if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
            raise McpConfigError(f'{where}: "url" must be an http:// or https:// address')
        return HttpServerConfig(
            name=name,
            url=url,
            headers=_strings(entry.get("headers", {}), where, "headers"),
            timeout=timeout,
        )
    command = entry["command"]
    if not isinstance(command, str) or not command.strip():
        raise McpConfigError(f'{where}: "command" must be a non-empty string')
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise McpConfigError(f'{where}: "args" must be a list of strings')
    cwd = entry.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd):
        raise McpConfigError(f'{where}: "cwd" must be a folder path')
    folder = None
    if cwd is not None:
        folder = Path(cwd).expanduser()
        if not folder.is_absolute() and base_dir is not None:
            folder = base_dir / folder
    return StdioServerConfig(
        name=name,
        command=command,
        args=tuple(args),
        env=_strings(entry.get("env", {}), where, "env"),
        cwd=folder,
        timeout=timeout,
    )


def _strings(value: Any, where: str, key: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f'{where}: "{key}" must be an object of strings')
    return dict(value)


def _timeout(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise McpConfigError(f'{where}: "timeout" must be a positive number of seconds')
    return float(value)
