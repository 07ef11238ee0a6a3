"""Commands meant to be pasted name the worker's server when it is not the `temporal` CLI's
default (issue 31, item 8): the pure functions of `loop/pasted_commands.py` and the session's
"send a message" line. The end-to-end check (a pasted command run through the real `temporal`
CLI against a server on a port of its own) is in tests/test_cli_approval_flow.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_agents.contracts.command_server import CommandServer
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.approvals import answer_command, open_request
from durable_agents.loop.pasted_commands import aimed_command, aimed_requests, server_flags
from durable_agents.loop.session_details import idle_details

SIGNAL = answer_command("wf 1", RequestKind.APPROVAL, "c1")


@pytest.mark.parametrize(
    ("server", "flags"),
    [
        (None, []),
        (CommandServer(address="localhost:7233"), []),
        (CommandServer(address="127.0.0.1:7233", namespace="default"), []),
        (CommandServer(address="127.0.0.1:17233"), ["--address", "127.0.0.1:17233"]),
        (CommandServer(address="localhost:7233", namespace="prod"), ["--namespace", "prod"]),
        (
            CommandServer(address="t.example:7233", namespace="a b"),
            ["--address", "t.example:7233", "--namespace", "a b"],
        ),
    ],
)
def test_flags_only_where_the_cli_default_would_miss(
    server: CommandServer | None, flags: list[str]
) -> None:
    assert server_flags(server) == flags


def test_a_command_gets_the_flags_once() -> None:
    server = CommandServer(address="127.0.0.1:17233", namespace="a b")
    aimed = aimed_command(SIGNAL, server)
    assert aimed == f"{SIGNAL} --address 127.0.0.1:17233 --namespace 'a b'"
    assert aimed_command(aimed, server) == aimed  # already aimed: as it is
    assert aimed_command("agent approve x y", server) == "agent approve x y"
    assert aimed_command(SIGNAL, CommandServer(address="localhost:7233")) == SIGNAL


def test_requests_are_copied_with_their_commands_aimed() -> None:
    request = open_request(
        kind=RequestKind.APPROVAL, workflow_id="wf 1", call_id="c1", tool="write_file",
        args={"path": "a"}, now=datetime(2026, 1, 1, tzinfo=UTC), timeout_seconds=None,
        on_timeout="reject",
    )  # fmt: skip
    [shown] = aimed_requests([request], CommandServer(address="h:1"))
    assert shown.command == f"{SIGNAL} --address h:1"
    assert request.command == SIGNAL  # what the run keeps is unchanged
    assert shown.model_copy(update={"command": SIGNAL}) == request


def test_the_sessions_send_line_names_the_server() -> None:
    details = idle_details("s-1", 2, TokenUsage(), 0, server=CommandServer(address="h:1"))
    assert '--name send --input \'{"text": "..."}\' --address h:1`' in details
    assert "--address" not in idle_details("s-1", 2, TokenUsage(), 0)
