"""The one authentication step of every server (`agent serve`, `agent mcp --http`, `agent a2a`),
as plain ASGI middleware: it runs before any route reads anything, and answers in the same
JSON shape as every other refusal.

- A request without a principal is 401 with `WWW-Authenticate: Bearer` (and
  `error="invalid_token"` for a wrong or expired one, RFC 6750).
- A principal with `max_open_requests` requests open (a flood of event streams) is 429 with
  `Retry-After` for one more.
- Otherwise the principal goes into the request's state: handlers read it with
  `principal_of(request)` (`request.state.principal` in FastAPI and Starlette).
- What it may do is checked where the server knows what a request does: `require_role`
  (403 naming the role) — FastAPI routes through `caller(role)`, the MCP tools and the A2A
  request handler call it themselves.

Public paths (the console's files, `/healthz`, the A2A agent card) and CORS preflights
(`OPTIONS`, which carry no credentials) pass without a principal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request

from durable_agents.contracts.principals import Principal, Role
from durable_agents.servers.auth.authenticator import (
    LOCAL_PRINCIPAL,
    Authenticator,
    Unauthenticated,
)
from durable_agents.servers.request_guards import ASGIApp, Receive, Scope, Send, send_json

PRINCIPAL_STATE = "principal"
"""The key of the principal in the ASGI scope's `state` (`request.state.principal`)."""
REALM = "agent"
RETRY_OPEN_SECONDS = 1
"""`Retry-After` of a 429 for too many open requests: one may close any moment."""


class RoleMissing(Exception):
    """The principal lacks the role a request needs (403)."""

    def __init__(self, principal: Principal, role: Role) -> None:
        super().__init__(
            f"principal {principal.name!r} may not do this: it needs the {role!r} role "
            f"(it has {', '.join(sorted(principal.roles)) or 'none'})"
        )
        self.role = role


def require_role(principal: Principal, role: Role) -> Principal:
    """`principal`, or `RoleMissing` when it lacks `role` (an admin has every role)."""
    if not principal.may(role):
        raise RoleMissing(principal, role)
    return principal


def bearer(scope: Scope) -> str | None:
    """The token of the request's `Authorization: Bearer <token>` header, if any."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def principal_of(request: Any) -> Principal:
    """The request's principal (a Starlette/FastAPI `Request`; None, as MCP over stdio has
    no request: the local user, `LOCAL_PRINCIPAL`)."""
    if request is None:
        return LOCAL_PRINCIPAL
    principal = request.scope.get("state", {}).get(PRINCIPAL_STATE)
    if not isinstance(principal, Principal):
        raise RuntimeError("the request did not pass the Authentication middleware")
    return principal


class Authentication:
    """401 for a request without a principal; the principal in the scope's state otherwise
    (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator,
        public_paths: Iterable[str] = (),
        public_prefixes: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.public_paths = frozenset(public_paths)
        self.public_prefixes = public_prefixes
        self._open: dict[tuple[str, str], int] = {}
        """Requests open now, by principal (tenant, name)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self._public(scope):
            await self.app(scope, receive, send)
            return
        token = bearer(scope)
        try:
            principal = await self.authenticator.authenticate(token)
        except Unauthenticated as error:
            challenge = f'Bearer realm="{REALM}"'
            if token is not None:
                challenge += ', error="invalid_token"'
            await send_json(
                send,
                401,
                {"error": f"{error}: send `Authorization: Bearer <token>`"},
                www_authenticate=challenge,
            )
            return
        scope.setdefault("state", {})[PRINCIPAL_STATE] = principal
        if not self.authenticator.configured:  # the local user, on loopback
            await self.app(scope, receive, send)
            return
        limit = self.authenticator.max_open_requests
        key = (principal.tenant, principal.name)
        if limit is not None and self._open.get(key, 0) >= limit:
            await send_json(
                send,
                429,
                {
                    "error": f"principal {principal.name!r} has {limit} requests open (event "
                    "streams included), the most it may: close one, then try again"
                },
                retry_after=str(RETRY_OPEN_SECONDS),
            )
            return
        self._open[key] = self._open.get(key, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._open[key] -= 1
            if not self._open[key]:
                del self._open[key]

    def _public(self, scope: Scope) -> bool:
        if scope.get("method") == "OPTIONS":
            return True  # a CORS preflight carries no credentials; CORSMiddleware answers it
        path: str = scope.get("path", "")
        return path in self.public_paths or path.startswith(self.public_prefixes)


def caller(role: Role) -> Callable[[Any], Principal]:
    """A FastAPI dependency: the request's principal, holding `role` (403 otherwise)."""

    def dependency(request: Request) -> Principal:
        try:
            return require_role(principal_of(request), role)
        except RoleMissing as error:
            raise HTTPException(403, str(error)) from None

    dependency.__name__ = f"caller_with_{role}"
    return dependency
