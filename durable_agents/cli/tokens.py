"""`agent token create NAME --tenant T --roles start,approve`: a new principal for the servers.

It makes a token (`secrets.token_urlsafe`), appends the principal with the token's SHA-256 to
the principals file (`AGENT_PRINCIPALS_FILE`, or `--file`; made if missing) and prints the
token once, on stdout alone, so that it can be piped into a secret store. The token is not
kept anywhere: lost, it is replaced by a new principal.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import get_args

from pydantic import ValidationError

from durable_agents.cli.commands import Context
from durable_agents.cli.errors import OK, CliError
from durable_agents.contracts.principals import DEFAULT_TENANT, Principal, Role

ROLES = get_args(Role)


def roles_option(text: str) -> frozenset[Role]:
    """`start,approve` -> the roles, each one of read, start, approve, admin."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in ROLES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{', '.join(unknown) or 'none given'}: roles are {', '.join(ROLES)} (comma-separated)"
        )
    return frozenset(names)  # type: ignore[arg-type]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`agent token create ...`."""
    actions = parser.add_subparsers(dest="token_action", required=True, metavar="ACTION")
    create = actions.add_parser(
        "create",
        help="make a principal's token: printed once, its SHA-256 written to the file",
        description="Make a principal's token: printed once, its SHA-256 written to the file.",
    )
    create.add_argument("name", help="the principal's name (what decisions record)")
    create.add_argument("--tenant", default=DEFAULT_TENANT, help="its tenant (default: default)")
    create.add_argument(
        "--roles",
        type=roles_option,
        required=True,
        metavar="ROLES",
        help=f"comma-separated, out of {', '.join(ROLES)}",
    )
    create.add_argument(
        "--expires-in-days", type=int, metavar="N", help="the token is refused after N days"
    )
    create.add_argument(
        "--file", type=Path, help="the principals file (default: $AGENT_PRINCIPALS_FILE)"
    )


async def token(args: argparse.Namespace, ctx: Context) -> int:
    """`agent token create` (see the module docstring)."""
    from durable_agents.servers.auth.principals_file import PrincipalsFileError, add_principal

    path: Path | None = args.file or ctx.target.settings.principals_file
    if path is None:
        raise CliError("no principals file: set AGENT_PRINCIPALS_FILE or give --file")
    try:
        Principal(name=args.name, tenant=args.tenant, roles=args.roles)
    except ValidationError as error:
        field = str(error.errors()[0]["loc"][0])
        raise CliError(f"--{field}: {error.errors()[0]['msg']}") from None
    expires = None
    if args.expires_in_days is not None:
        if args.expires_in_days < 1:
            raise CliError("--expires-in-days: at least 1")
        expires = datetime.now(UTC).replace(microsecond=0) + timedelta(days=args.expires_in_days)
    try:
        new_token = add_principal(path, args.name, args.tenant, args.roles, expires)
    except PrincipalsFileError as error:
        raise CliError(str(error)) from None
    if ctx.json:
        ctx.emit({"name": args.name, "tenant": args.tenant, "token": new_token})
    else:
        ctx.say(new_token)
    until = f", until {expires.isoformat()}" if expires else ""
    ctx.err.write(
        f"principal {args.name!r} (tenant {args.tenant}, roles {', '.join(sorted(args.roles))}"
        f"{until}) added to {path}; its token above is shown only this once\n"
    )
    return OK
