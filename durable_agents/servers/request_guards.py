"""What every server of this project checks before a route sees a request: that it was meant
for this server, and that a web page elsewhere cannot make the user's browser send it.

`agent serve`, `agent a2a` and `agent mcp --http` listen on loopback without a token by
default, so any web page the user visits could reach them. Two browser tricks need no
credentials at all:

- **cross-site requests**: a page on another origin POSTs a *simple request* (text/plain, a
  form, or no Content-Type), which a browser sends without asking the server first (no CORS
  preflight). The page cannot read the answer, but the request does its work: it starts a run,
  sends a message into a session, cancels a run;
- **DNS rebinding**: a page rebinds its own domain to 127.0.0.1 and becomes same-origin with
  the server: it can then read what waits (with the digests) and approve it. Its requests name
  the attacker's domain in `Host`.

`RequestGuard` answers, before any route reads anything:

- 421 to a `Host` that is not one this server is served under (`allowed_host_names`: the bound
  address, `localhost` and its loopback addresses, and names configured), as the MCP SDK does;
- 403 to an `Origin` that is neither absent, nor the server's own (`http://` + the request's
  `Host`, once that is known to be ours), nor configured (the HTTP API's CORS origins);
- 415 to a POST, PUT or PATCH whose body is not declared `application/json`, empty bodies
  included: a browser sends only text/plain, a form or no type without a preflight, and a
  preflight for JSON from another origin fails unless that origin is allowed;
- 400 to a header value over `MAX_HEADER_BYTES` (a huge `Last-Event-ID`, say), naming it.

`BodyLimit` (413 to a body over the limit) and `NestingLimit` (400 to JSON nested too deeply)
bound what a route reads.

`SecurityHeaders` sets `nosniff`, no referrer, no framing and a Content-Security-Policy on every
answer (the console's own scripts and styles only; nothing at all for data), and
`checked_origins` refuses `*` or anything but an exact origin among the origins allowed.

Every refusal is a JSON body `{"error": "..."}` saying what to send instead.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOST_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
"""The names a loopback server is always reached by."""
ANY_HOST = "*"
"""A configured host name that lets every `Host` through (behind a proxy that checks it)."""
WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
"""Bind addresses that name no host (every interface): not a `Host` anyone sends."""
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
"""The methods whose body must be JSON (POST is the only one a browser sends cross-site
without a preflight; PUT and PATCH are checked alike)."""
JSON_MEDIA_TYPE = "application/json"
MAX_HEADER_BYTES = 8 * 1024
"""Longest header value taken (a bearer token, a `Last-Event-ID`, an `Mcp-Session-Id` are far
shorter); a longer one is 400 naming the header."""


async def send_json(send: Send, status: int, body: dict[str, Any], **headers: str) -> None:
    """A complete JSON response."""
    data = json.dumps(body).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
    ]
    raw_headers += [(k.lower().replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": data})


def host_name(host: str) -> str:
    """The name part of a `Host` header or a bind address, lower case, without its port,
    brackets or trailing dot: `[::1]:8000` -> `::1`, `LocalHost.:80` -> `localhost`."""
    value = host.strip().lower()
    if value.startswith("["):
        value = value[1:].partition("]")[0]
    elif value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def allowed_host_names(bind: str, configured: Iterable[str] = ()) -> frozenset[str]:
    """The `Host` names a server bound to `bind` answers: the bound address (unless it is a
    wildcard), the loopback names, and the configured ones."""
    names = set(LOOPBACK_HOST_NAMES) | {host_name(name) for name in configured if name.strip()}
    bound = host_name(bind)
    if bound not in WILDCARD_ADDRESSES:
        names.add(bound)
    return frozenset(names)


def media_type(content_type: str | None) -> str | None:
    """`application/json` of `application/json; charset=utf-8`; None when there is none."""
    if content_type is None:
        return None
    return content_type.partition(";")[0].strip().lower() or None


@dataclass(frozen=True)
class GuardSettings:
    """What `RequestGuard` lets through."""

    host_names: frozenset[str]
    """`allowed_host_names(...)`; `*` among them lets every `Host` through."""
    origins: frozenset[str] = frozenset()
    """Origins allowed besides the server's own (`http://host:port`, exactly:
    `checked_origins`)."""
    option_hint: str = "--allowed-host"
    """The option that adds a host name, named in the 421."""

    def host_allowed(self, host: str) -> bool:
        return ANY_HOST in self.host_names or host_name(host) in self.host_names

    def origin_allowed(self, origin: str, scheme: str, host: str) -> bool:
        own = f"{'https' if scheme in ('https', 'wss') else 'http'}://{host.strip().lower()}"
        return origin.lower() == own or origin in self.origins


class RequestGuard:
    """421 / 403 / 415 / 400 before the application sees the request (see the module doc).
    CORS preflights (`OPTIONS`, no body) meet the header, `Host` and `Origin` checks; the CORS
    middleware answers them."""

    def __init__(self, app: ASGIApp, settings: GuardSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            status, message = refusal
            await send_json(send, status, {"error": message})
            return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """The status and message that refuse this request, or None to let it through."""
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", []):
            name = raw_name.decode("latin-1").lower()
            if len(raw_value) > MAX_HEADER_BYTES:
                return 400, f"the {name} header is over the limit of {MAX_HEADER_BYTES} bytes"
            headers.setdefault(name, raw_value.decode("latin-1"))
        host = headers.get("host", "")
        if not host or not self.settings.host_allowed(host):
            what = f"this server is not served as {host!r}" if host else "no Host header"
            return 421, (
                f"{what}: send the request "
                f"to 127.0.0.1 or localhost, or start the server with {self.settings.option_hint} "
                f"{host_name(host) or 'NAME'} to serve that name"
            )
        origin = headers.get("origin")
        if origin is not None and not self.settings.origin_allowed(
            origin, scope.get("scheme", "http"), host
        ):
            return 403, (
                f"requests from the web origin {origin!r} are refused: only this server's own "
                "pages (and origins configured for it) may call it"
            )
        if scope.get("method") in BODY_METHODS:
            declared = media_type(headers.get("content-type"))
            if declared != JSON_MEDIA_TYPE:
                shown = "none" if declared is None else declared
                return 415, (
                    f"the body must be JSON, sent with Content-Type: {JSON_MEDIA_TYPE} (this "
                    f"request's Content-Type is {shown}), an empty body included"
                )
        return None


class BodyTooLarge(HTTPException):
    """Raised from `receive` once the body goes over the limit; an `HTTPException` so that
    FastAPI, reading the body, passes it on as a 413 instead of calling it a parse error."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"the request body is over the limit of {max_bytes} bytes")


class BodyLimit:
    """413 for a request body over `max_bytes`: at once from `Content-Length`, else as soon as
    the streamed body goes over (nothing more is read)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._refuse(send)
                return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        await send_json(
            send, 413, {"error": f"the request body is over the limit of {self.max_bytes} bytes"}
        )


class NestingLimit:
    """400 to a JSON body nested too deeply for Python's parser (a `RecursionError`), for an
    application that would answer it with an internal error (the A2A SDK's JSON-RPC routes
    did). The body is read whole (bound it with `BodyLimit` outside this), parsed once to
    check, then handed to the application as it came; a body that is not JSON at all is left
    for the application to refuse in its own terms."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replaying([message], receive), send)
                return
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        try:
            json.loads(body)
        except RecursionError:
            await send_json(send, 400, {"error": "the body is JSON nested too deeply"})
            return
        except ValueError:
            pass
        whole = {"type": "http.request", "body": bytes(body), "more_body": False}
        await self.app(scope, _replaying([whole], receive), send)


def _replaying(messages: list[Message], receive: Receive) -> Receive:
    """`receive` that first gives back `messages` (already read), then reads on."""
    waiting = list(messages)

    async def replay() -> Message:
        return waiting.pop(0) if waiting else await receive()

    return replay


API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"
"""The policy of every answer that is data (JSON, SSE): nothing in it may load or run."""
CONSOLE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
"""The console's policy: its own script and style only (no inline code, no eval), requests to
this server only, and no framing (clickjacking)."""
SECURITY_HEADERS = {
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"no-referrer",
    b"x-frame-options": b"DENY",
    b"cross-origin-opener-policy": b"same-origin",
}


class SecurityHeaders:
    """Sets the security headers on every answer (an application's own header is kept):
    `nosniff`, no referrer, no framing, and a Content-Security-Policy — the console's on
    `console_paths` and `/static/`, `API_CSP` elsewhere."""

    def __init__(self, app: ASGIApp, console_paths: Iterable[str] = ()) -> None:
        self.app = app
        self.console_paths = frozenset(console_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        console = path in self.console_paths or path.startswith("/static/")
        policy = (CONSOLE_CSP if console else API_CSP).encode()

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                extra = {**SECURITY_HEADERS, b"content-security-policy": policy}
                headers += [(k, v) for k, v in extra.items() if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


def checked_origins(origins: Iterable[str], option: str) -> frozenset[str]:
    """Web origins allowed to call a server, each `scheme://host[:port]` exactly; `*` is
    refused (any page could then call with the user's token), as is a path or a typo."""
    checked = set()
    for origin in origins:
        value = origin.strip().rstrip("/")
        if value == ANY_HOST:
            raise ValueError(
                f"{option}: '*' would let every web page call this server; name each origin"
            )
        scheme, sep, rest = value.partition("://")
        if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
            raise ValueError(f"{option}: {origin!r} is not an origin (http(s)://host[:port])")
        checked.add(value)
    return frozenset(checked)
