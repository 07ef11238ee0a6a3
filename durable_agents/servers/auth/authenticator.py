"""From a bearer token to a `Principal`: the principals file's tokens (by their SHA-256, each
compared in constant time), `AGENT_API_TOKEN` (one admin of the default tenant, as `agent serve`
has always taken it) and OIDC tokens; and the rule of where a server may listen.

With none of them configured, a server is open to whoever reaches it: it then listens on
loopback only, and every request is `LOCAL_PRINCIPAL` (an admin of the default tenant).
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from durable_agents.contracts.principals import DEFAULT_TENANT, Principal
from durable_agents.runtime.settings import EnvironmentSettings
from durable_agents.servers.auth.oidc import InvalidOidcToken, OidcSettings, OidcVerifier
from durable_agents.servers.auth.principals_file import (
    PrincipalEntry,
    PrincipalsFileError,
    load_principals,
    token_digest,
)
from durable_agents.servers.http_api.config import is_loopback

log = logging.getLogger("durable_agents.servers.auth")

LOCAL_PRINCIPAL = Principal(name="local", tenant=DEFAULT_TENANT, roles=frozenset({"admin"}))
"""Who every request is on a server with no credentials configured (loopback only)."""
API_TOKEN_PRINCIPAL = Principal(name="api-token", tenant=DEFAULT_TENANT, roles=frozenset({"admin"}))
"""Who a request with `AGENT_API_TOKEN` is."""
MIN_API_TOKEN_CHARS = 16


class Unauthenticated(Exception):
    """No principal for this request (401); the message says why, never the token."""


def token_matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison (of the UTF-8 bytes: `compare_digest` takes ASCII str only)."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


@dataclass
class PrincipalsSource:
    """The principals file, read again when it changes (a token made by `agent token create`
    works without a restart). A change that does not load keeps the entries before it, and
    says so in the log."""

    path: Path
    _entries: tuple[PrincipalEntry, ...] = ()
    _stamp: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        self._entries = load_principals(self.path).principal  # a bad file stops the start
        self._stamp = self._stat()

    def _stat(self) -> tuple[int, int] | None:
        try:
            stat = os.stat(self.path)
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def entries(self) -> tuple[PrincipalEntry, ...]:
        stamp = self._stat()
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._entries = load_principals(self.path).principal
            except PrincipalsFileError as error:
                log.warning("principals file not reloaded, the entries before stay: %s", error)
        return self._entries


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Authenticator:
    """Who a bearer token is (see the module docstring)."""

    principals: PrincipalsSource | None = None
    api_token: str | None = field(default=None, repr=False)
    oidc: OidcVerifier | None = None
    max_open_requests: int | None = None
    """The most requests one principal may have open at once (None: no limit)."""
    clock: Callable[[], datetime] = utc_now

    @classmethod
    def from_settings(cls, settings: EnvironmentSettings) -> Authenticator:
        """The credentials the environment configures (`AGENT_PRINCIPALS_FILE`,
        `AGENT_API_TOKEN`, `AGENT_OIDC_*`); a principals file that does not load raises
        `PrincipalsFileError` naming the entry."""
        token = settings.api_token.get_secret_value() if settings.api_token else None
        oidc = None
        if settings.oidc_issuer is not None:
            from durable_agents.runtime.extras import require

            require("oidc", "AGENT_OIDC_ISSUER (OIDC tokens)")
            oidc = OidcVerifier(
                OidcSettings(
                    issuer=settings.oidc_issuer,
                    audience=settings.oidc_audience or "",
                    jwks_url=settings.oidc_jwks_url,
                    name_claim=settings.oidc_name_claim,
                    tenant_claim=settings.oidc_tenant_claim,
                    roles_claim=settings.oidc_roles_claim,
                    tenant=settings.oidc_tenant,
                    algorithms=tuple(settings.oidc_algorithms),
                )
            )
        source = PrincipalsSource(settings.principals_file) if settings.principals_file else None
        return cls(
            principals=source,
            api_token=token,
            oidc=oidc,
            max_open_requests=settings.max_open_requests,
        )

    @property
    def configured(self) -> bool:
        """Whether any credential is configured (else every request is `LOCAL_PRINCIPAL`)."""
        return self.principals is not None or self.api_token is not None or self.oidc is not None

    def describe(self) -> str:
        """What the server takes, for its start-up line."""
        parts = []
        if self.principals is not None:
            parts.append(f"principals of {self.principals.path}")
        if self.oidc is not None:
            parts.append(f"OIDC tokens of {self.oidc.settings.issuer}")
        if self.api_token is not None:
            parts.append("AGENT_API_TOKEN")
        return "bearer tokens: " + ", ".join(parts) if parts else "no credentials: loopback only"

    def listen_refusal(self, host: str) -> str | None:
        """Why a server must not listen on `host`, in one line, or None: beyond loopback it
        needs credentials, or anyone on the network could start runs and approve calls."""
        if self.configured or is_loopback(host):
            return None
        return (
            f"refusing to listen on {host} with no credentials: set AGENT_PRINCIPALS_FILE "
            "(agent token create makes its entries) or AGENT_OIDC_ISSUER (or AGENT_API_TOKEN), "
            "or listen on 127.0.0.1"
        )

    async def authenticate(self, token: str | None) -> Principal:
        """The principal of `token` (None: no `Authorization: Bearer`), or `Unauthenticated`."""
        if not self.configured:
            return LOCAL_PRINCIPAL
        if token is None:
            raise Unauthenticated("missing bearer token")
        entry = self._entry(token)
        if entry is not None:
            if entry.expired(self.clock()):
                raise Unauthenticated(f"the token of principal {entry.name!r} has expired")
            return entry.principal()
        if self.api_token is not None and token_matches(token, self.api_token):
            return API_TOKEN_PRINCIPAL
        if self.oidc is not None and self.oidc.looks_like_jwt(token):
            try:
                return await self.oidc.principal(token)
            except InvalidOidcToken as error:
                raise Unauthenticated(str(error)) from None
        raise Unauthenticated("wrong bearer token")

    def _entry(self, token: str) -> PrincipalEntry | None:
        """The entry whose hash is the token's; every entry is compared, in constant time."""
        if self.principals is None:
            return None
        digest = token_digest(token).encode()
        found = None
        for entry in self.principals.entries():
            if hmac.compare_digest(entry.token_sha256.encode(), digest):
                found = entry
        return found


def server_authenticator(settings: EnvironmentSettings, host: str) -> Authenticator:
    """The authenticator of a server about to listen on `host`, checked before it binds: a
    principals file that does not load, or no credentials beyond loopback, is an
    `InvalidInput` saying why in one line (the `agent` command exits with it)."""
    from durable_agents.errors import InvalidInput

    try:
        authenticator = Authenticator.from_settings(settings)
    except PrincipalsFileError as error:
        raise InvalidInput(f"AGENT_PRINCIPALS_FILE: {error}") from None
    refusal = authenticator.listen_refusal(host)
    if refusal is not None:
        raise InvalidInput(refusal, field="host")
    return authenticator
