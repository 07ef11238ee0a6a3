"""The bearer token and the body size limit, as plain ASGI middleware (they run before any
route parses anything, and answer in the same JSON shape as every other error); the checks
every server makes against browsers (`Host`, `Origin`, JSON bodies) are
`servers.request_guards`.

The token is compared in constant time (`hmac.compare_digest`) so its length or prefix cannot
be learnt from how fast a wrong one is refused. The console's files (`/`, `/static/...`) and
`/healthz` are public: they hold no data, and the page asks for the token to call the API.
"""

from __future__ import annotations

import hmac

from starlette.exceptions import HTTPException

from servers.request_guards import ASGIApp, Message, Receive, Scope, Send, send_json

PUBLIC_PATHS = frozenset({"/", "/healthz", "/favicon.ico"})
PUBLIC_PREFIXES = ("/static/",)


def bearer(scope: Scope) -> str | None:
    """The token of the request's `Authorization: Bearer <token>` header, if any."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def token_matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison (of the UTF-8 bytes: `compare_digest` takes ASCII str only)."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class BearerAuth:
    """401 for a request without the right `Authorization: Bearer <token>` (public paths and
    CORS preflights excepted)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._public(scope):
            await self.app(scope, receive, send)
            return
        given = bearer(scope)
        if not token_matches(given, self._token):
            problem = "missing bearer token" if given is None else "wrong bearer token"
            await send_json(
                send,
                401,
                {"error": f"{problem}: send `Authorization: Bearer <AGENT_API_TOKEN>`"},
                www_authenticate='Bearer realm="agent"',
            )
            return
        await self.app(scope, receive, send)

    @staticmethod
    def _public(scope: Scope) -> bool:
        path: str = scope.get("path", "")
        if scope.get("method") == "OPTIONS":
            return True  # a CORS preflight carries no credentials; CORSMiddleware answers it
        return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


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
