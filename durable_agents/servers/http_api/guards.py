"""The bearer token, as plain ASGI middleware (it runs before any route parses anything, and
answers in the same JSON shape as every other error); the body size limit and the checks every
server makes against browsers (`Host`, `Origin`, JSON bodies) are `servers.request_guards`.

The token is compared in constant time (`hmac.compare_digest`) so its length or prefix cannot
be learnt from how fast a wrong one is refused. The console's files (`/`, `/static/...`) and
`/healthz` are public: they hold no data, and the page asks for the token to call the API.
"""

from __future__ import annotations

import hmac

from durable_agents.servers.request_guards import ASGIApp, Receive, Scope, Send, send_json

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
