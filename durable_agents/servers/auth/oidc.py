"""OIDC bearer tokens: a JWT signed by the issuer's keys (its JWKS), for this audience, not
expired, mapped to a `Principal` by settings (which claim names the principal, its tenant and
its roles).

The checks are PyJWT's (`jwt.decode` with the key `PyJWKClient` picks from the JWKS by the
token's `kid`, the JWKS cached for five minutes); the `oidc` extra installs it. Without
`AGENT_OIDC_JWKS_URL`, the JWKS is found from the issuer's discovery document
(`<issuer>/.well-known/openid-configuration`), once.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args

from durable_agents.contracts.principals import Principal, Role

if TYPE_CHECKING:
    import jwt

KNOWN_ROLES: frozenset[str] = frozenset(get_args(Role))
DISCOVERY_PATH = "/.well-known/openid-configuration"
FETCH_TIMEOUT_SECONDS = 10.0
LEEWAY_SECONDS = 30
"""Clock skew allowed on `exp`, `nbf` and `iat`."""


class InvalidOidcToken(Exception):
    """The token is not one this server takes; the message says why, without the token."""


def claim(claims: dict[str, Any], path: str) -> Any:
    """The value at a dotted claim path (`realm_access.roles`), or None."""
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def roles_of(value: Any) -> frozenset[Role]:
    """The known roles of a roles claim (a list, or a space-separated string like `scope`);
    the identity provider's other roles are not ours and are left out."""
    names = value.split() if isinstance(value, str) else value if isinstance(value, list) else []
    return frozenset(n for n in names if isinstance(n, str) and n in KNOWN_ROLES)  # type: ignore[misc]


@dataclass(frozen=True)
class OidcSettings:
    """What `EnvironmentSettings` says about the issuer (the `AGENT_OIDC_*` variables)."""

    issuer: str
    audience: str
    jwks_url: str | None = None
    name_claim: str = "sub"
    tenant_claim: str = "tenant"
    roles_claim: str = "roles"
    tenant: str | None = None
    """The tenant of a token without the tenant claim (none: such a token is refused)."""
    algorithms: tuple[str, ...] = ("RS256", "ES256")


@dataclass
class OidcVerifier:
    """Turns an OIDC token into a `Principal`, or raises `InvalidOidcToken`."""

    settings: OidcSettings
    _keys: Any = field(default=None, repr=False)

    def looks_like_jwt(self, token: str) -> bool:
        return token.count(".") == 2

    async def principal(self, token: str) -> Principal:
        """The checked token's principal (the JWKS is fetched off the event loop)."""
        return await asyncio.to_thread(self._principal, token)

    def _principal(self, token: str) -> Principal:
        import jwt

        try:
            key = self._jwks().get_signing_key_from_jwt(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=list(self.settings.algorithms),
                audience=self.settings.audience,
                issuer=self.settings.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidOidcToken("the OIDC token has expired") from None
        except jwt.PyJWKClientError as error:
            raise InvalidOidcToken(f"the OIDC token's key is unknown ({error})") from None
        except jwt.InvalidTokenError as error:
            raise InvalidOidcToken(f"invalid OIDC token ({error})") from None
        return self._mapped(claims)

    def _mapped(self, claims: dict[str, Any]) -> Principal:
        settings = self.settings
        name = claim(claims, settings.name_claim)
        tenant = claim(claims, settings.tenant_claim) or settings.tenant
        if not isinstance(name, str) or not name:
            raise InvalidOidcToken(f"the OIDC token has no {settings.name_claim!r} claim")
        if not isinstance(tenant, str):
            raise InvalidOidcToken(f"the OIDC token has no {settings.tenant_claim!r} claim")
        try:
            return Principal(
                name=name, tenant=tenant, roles=roles_of(claim(claims, settings.roles_claim))
            )
        except ValueError:
            raise InvalidOidcToken(
                f"the OIDC token's {settings.tenant_claim!r} claim is not a tenant name"
            ) from None

    def _jwks(self) -> jwt.PyJWKClient:
        if self._keys is None:
            import jwt

            url = self.settings.jwks_url or discover_jwks_url(self.settings.issuer)
            self._keys = jwt.PyJWKClient(url, timeout=FETCH_TIMEOUT_SECONDS)
        keys: jwt.PyJWKClient = self._keys
        return keys


def discover_jwks_url(issuer: str) -> str:
    """The `jwks_uri` of the issuer's discovery document."""
    import jwt

    url = issuer.rstrip("/") + DISCOVERY_PATH
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_SECONDS) as response:
            document = json.load(response)
    except (OSError, ValueError) as error:
        raise jwt.PyJWKClientError(f"cannot read {url}: {error}") from None
    jwks_uri = document.get("jwks_uri") if isinstance(document, dict) else None
    if not isinstance(jwks_uri, str):
        raise jwt.PyJWKClientError(f"{url} names no jwks_uri")
    return jwks_uri
