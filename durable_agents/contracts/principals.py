"""Who makes a request: an authenticated principal, its tenant and its roles.

The servers (`agent serve`, `agent mcp` over HTTP, `agent a2a`) authenticate every request to
a `Principal` (a token from the principals file, or an OIDC token's claims) and hand it to
`AgentClient`, which starts, lists, reads and decides only within the principal's tenant and
records the principal on every decision it sends. A decision sent with the plain Temporal CLI
carries no principal: its `by` is self-declared (`DecisionMaker.self_declared`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_agents.contracts.omitted import none_omitted

Role = Literal["read", "start", "approve", "admin"]
"""`read`: list, read and stream runs; `start`: start runs and send messages; `approve`:
approve, reject, edit, reply and steer; `admin`: everything, in every tenant."""

TENANT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
DEFAULT_TENANT = "default"
"""The tenant of runs started without one (the Temporal CLI, a server without principals)."""


class PrincipalLimits(BaseModel):
    """How much one principal may start (`client.limits`); a limit left out is no limit.
    Counted from Temporal (visibility and the runs' usage), so a server restart resets none."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    runs_per_minute: int | None = Field(default=None, ge=1, le=1_000_000)
    """Runs started in the last 60 seconds."""
    concurrent_runs: int | None = Field(default=None, ge=1, le=1_000_000)
    """Runs started by the principal that are still running."""
    tokens_per_day: int | None = Field(default=None, ge=1, le=10**15)
    """Model tokens (prompt and completion) of the runs started in the last 24 hours."""


class Principal(BaseModel):
    """An authenticated caller."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    tenant: str = Field(default=DEFAULT_TENANT, pattern=TENANT_PATTERN)
    roles: frozenset[Role] = frozenset()
    limits: PrincipalLimits = PrincipalLimits()
    """What it may start (none by default)."""

    def may(self, role: Role) -> bool:
        """Whether the principal holds `role` (an admin holds every role)."""
        return role in self.roles or "admin" in self.roles


SIGNATURE_PATTERN = r"^[0-9a-f]{64}$"
"""A maker's signature: the hex HMAC-SHA256 of the message it signs
(`contracts.maker_signature`)."""


class DecisionMaker(BaseModel):
    """Who made a decision, as history records it: an authenticated principal (through a
    server) or a name the sender gave (the Temporal CLI, a signal): `self_declared`.

    A server's maker carries a `signature`, made with the decision key the servers and the
    workers hold (`runtime.decision_key`), over the message and the run it is addressed to.
    The run checks it (`workflows.makers`) and records the maker without it: `self_declared`
    False only when it verified, so a maker typed into a plain signal is recorded as
    self-declared, whatever it claims."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    tenant: str | None = None
    self_declared: bool = True
    signature: str | None = none_omitted(
        pattern=SIGNATURE_PATTERN,
        description="Set by a server: the HMAC of the message (checked by the run, never "
        "recorded).",
    )
