"""The principals file (`AGENT_PRINCIPALS_FILE`): who may call the servers, in TOML.

    [[principal]]
    name = "ci-bot"
    token_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    tenant = "acme"
    roles = ["start", "read"]
    expires_at = 2027-06-01T00:00:00Z   # optional
    limits = { runs_per_minute = 10, concurrent_runs = 3, tokens_per_day = 200000 }  # optional

Only the SHA-256 of each token is kept (a token is 256 random bits, so a plain hash is enough:
there is nothing to guess from it). `agent token create` makes a token, prints it once and
appends its entry (`add_principal`), keeping the file's comments and layout (tomlkit).
"""

from __future__ import annotations

import hashlib
import secrets
import tomllib
from datetime import datetime
from pathlib import Path

import tomlkit
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from durable_agents.contracts.principals import TENANT_PATTERN, Principal, PrincipalLimits, Role
from durable_agents.loop.validation_errors import describe_validation_error

TOKEN_BYTES = 32
"""`secrets.token_urlsafe(32)`: 256 random bits, 43 characters."""
SHA256_PATTERN = r"^[0-9a-f]{64}$"


class PrincipalsFileError(ValueError):
    """The principals file cannot be used; the message names the file and the entry."""


def token_digest(token: str) -> str:
    """The hex SHA-256 of a token, as the file keeps it."""
    return hashlib.sha256(token.encode()).hexdigest()


class PrincipalEntry(BaseModel):
    """One `[[principal]]` of the file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    token_sha256: str = Field(pattern=SHA256_PATTERN)
    """The hex SHA-256 of the principal's token (never the token)."""
    tenant: str = Field(pattern=TENANT_PATTERN)
    roles: frozenset[Role] = Field(min_length=1)
    expires_at: AwareDatetime | None = None
    """After this instant the token is refused (401, saying it expired)."""
    limits: PrincipalLimits = PrincipalLimits()
    """`limits = { runs_per_minute = 10, concurrent_runs = 3, tokens_per_day = 200000 }`
    (`client.limits`; any of them, or none)."""

    def principal(self) -> Principal:
        return Principal(name=self.name, tenant=self.tenant, roles=self.roles, limits=self.limits)

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at


class PrincipalsFile(BaseModel):
    """Every entry of the file, checked: names and token hashes are unique."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    principal: tuple[PrincipalEntry, ...] = ()


def _entry_label(data: object, index: int) -> str:
    name = data.get("name") if isinstance(data, dict) else None
    return f"principal {name!r}" if isinstance(name, str) else f"principal #{index + 1}"


def parse_principals(text: str, source: str) -> PrincipalsFile:
    """The entries of a principals file's text, or a `PrincipalsFileError` naming `source` and
    the entry (by name, else by its place) and what is wrong with it."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PrincipalsFileError(f"{source}: not TOML ({error})") from None
    unknown = set(data) - {"principal"}
    if unknown:
        raise PrincipalsFileError(
            f"{source}: unknown table {sorted(unknown)[0]!r} (only [[principal]] entries)"
        )
    raw = data.get("principal", [])
    if not isinstance(raw, list):
        raise PrincipalsFileError(f"{source}: write each entry as [[principal]]")
    entries = []
    for index, item in enumerate(raw):
        try:
            entries.append(PrincipalEntry.model_validate(item))
        except ValidationError as error:
            raise PrincipalsFileError(
                f"{source}: {_entry_label(item, index)}: "
                + "; ".join(describe_validation_error(error).splitlines())
            ) from None
    _check_unique(entries, source)
    return PrincipalsFile(principal=tuple(entries))


def _check_unique(entries: list[PrincipalEntry], source: str) -> None:
    names: set[str] = set()
    digests: dict[str, str] = {}
    for entry in entries:
        if entry.name in names:
            raise PrincipalsFileError(f"{source}: principal {entry.name!r} is listed twice")
        names.add(entry.name)
        if entry.token_sha256 in digests:
            raise PrincipalsFileError(
                f"{source}: principals {digests[entry.token_sha256]!r} and {entry.name!r} "
                "have the same token"
            )
        digests[entry.token_sha256] = entry.name


def load_principals(path: Path) -> PrincipalsFile:
    """The file's entries (see `parse_principals`); a missing or unreadable file is an error
    too: a server told to use a file must not start open."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise PrincipalsFileError(f"{path}: cannot read it ({error.strerror})") from None
    return parse_principals(text, str(path))


def add_principal(
    path: Path,
    name: str,
    tenant: str,
    roles: frozenset[Role],
    expires_at: datetime | None = None,
) -> str:
    """Make a token for a new principal, append its entry to `path` (made if missing, with
    owner-only permissions) and return the token: the only time it is seen."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    current = parse_principals(text, str(path))
    if any(entry.name == name for entry in current.principal):
        raise PrincipalsFileError(f"{path}: a principal named {name!r} exists already")
    token = secrets.token_urlsafe(TOKEN_BYTES)
    entry = PrincipalEntry(
        name=name,
        token_sha256=token_digest(token),
        tenant=tenant,
        roles=roles,
        expires_at=expires_at,
    )
    document = tomlkit.parse(text)
    table = tomlkit.table()
    for key, value in entry.model_dump(exclude_none=True, exclude_defaults=True).items():
        table[key] = sorted(value) if key == "roles" else value
    entries = document.get("principal")
    if entries is None:
        entries = tomlkit.aot()
        document["principal"] = entries
    table.add(tomlkit.nl())
    entries.append(table)
    rendered = tomlkit.dumps(document)
    parse_principals(rendered, str(path))  # what is written must load
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    path.write_text(rendered, encoding="utf-8")
    return token
