"""`GET /v1/me`: who `agent serve` takes the caller to be, so the console can say "signed in as
anna (acme, roles approve, start)". Any authenticated principal may ask (no role needed: a
principal that may only start runs still sees who it is). The answer holds the principal's
name, tenant, roles and limits, never its token or the token's digest.

On a server with no credentials configured (loopback only) every request is the local user
(`servers.auth.authenticator.LOCAL_PRINCIPAL`): `authenticated` is false and the console shows
no one.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from durable_agents.contracts.principals import PrincipalLimits, Role
from durable_agents.servers.auth.middleware import principal_of

router = APIRouter()


class SignedIn(BaseModel):
    """The caller as `agent serve` authenticated it (`GET /v1/me`)."""

    authenticated: bool = Field(
        description="False on a server with no credentials configured (loopback only): "
        "every request is the local user."
    )
    name: str = Field(description="The principal's name, recorded on every decision it makes.")
    tenant: str = Field(description="The only tenant whose runs and sessions it sees.")
    roles: list[Role] = Field(description="What it may do: read, start, approve, admin.")
    limits: PrincipalLimits = Field(description="What it may start (`client.limits`).")


@router.get("/v1/me", tags=["server"])
async def me(request: Request) -> SignedIn:
    """Who the caller is signed in as: name, tenant, roles and limits, never a token."""
    principal = principal_of(request)
    authenticator = request.app.state.config.authenticator
    return SignedIn(
        authenticated=authenticator is not None and authenticator.configured,
        name=principal.name,
        tenant=principal.tenant,
        roles=sorted(principal.roles),
        limits=principal.limits,
    )
