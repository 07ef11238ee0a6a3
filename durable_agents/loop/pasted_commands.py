"""Commands meant to be pasted name the server they must reach (issue 31, item 8).

A run hands out `temporal workflow signal ...` / `update execute ...` commands (each pending
request's `command`, the session's "send a message" line). The `temporal` CLI goes to
localhost:7233, namespace `default`, unless told otherwise, so a command for a worker whose
server is elsewhere (a dev server on TEMPORAL_DEV_PORT=17233, another namespace) failed when
pasted. `aimed_command` adds `--address` (and `--namespace` when not `default`) whenever the
worker's server is not that default.

It is applied where people read the commands (the `status`, `turn_status` and
`pending_approvals` queries, the current details), never where a request is recorded: what a
run keeps in its state, carries across continue-as-new and reports to its session or parent
stays as it was, so replay and old histories are untouched, and a request recorded before this
change is shown aimed as well. Pure functions: the server comes from the worker's catalog.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.command_server import DEFAULT_NAMESPACE, CommandServer

CLI_DEFAULT_ADDRESSES = frozenset({"localhost:7233", "127.0.0.1:7233"})
"""Where the `temporal` CLI goes when no address is given (and what reaches the same server)."""


def server_flags(server: CommandServer | None) -> list[str]:
    """`--address A` and `--namespace N`, each only when it is not the CLI's default."""
    if server is None:
        return []
    flags = []
    if server.address not in CLI_DEFAULT_ADDRESSES:
        flags += ["--address", server.address]
    if server.namespace != DEFAULT_NAMESPACE:
        flags += ["--namespace", server.namespace]
    return flags


def aimed_command(command: str, server: CommandServer | None) -> str:
    """`command` (a `temporal ...` command) with the flags that reach `server` appended; as it
    is when it already names an address or namespace, or needs none."""
    flags = server_flags(server)
    if not flags or not command.startswith("temporal "):
        return command
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if "--address" in words or "--namespace" in words:
        return command
    return f"{command} {shlex.join(flags)}"


def aimed_requests(
    requests: Iterable[PendingRequest], server: CommandServer | None
) -> list[PendingRequest]:
    """The requests, each with its `command` aimed at `server`."""
    shown = []
    for request in requests:
        command = aimed_command(request.command, server)
        shown.append(request if command == request.command else
                     request.model_copy(update={"command": command}))  # fmt: skip
    return shown
