"""Issue 33: the CLI and the servers reach runs only through the typed client
(`durable_agents.client`: `AgentClient`, `RunHandle`, `SessionHandle`), never through
temporalio's raw `Client`.

An AST check over every module under `durable_agents/cli/` and `durable_agents/servers/`: no
attribute there may name a method of `temporalio.client.Client` that reaches workflows,
schedules or activities (`get_workflow_handle`, `list_workflows`, `start_workflow`,
`count_workflows`, ... the set is read from the SDK's class, so a method a new SDK adds is
covered too), nor its raw gRPC services (`workflow_service`, ...). Connecting (`connect`,
`durable_agents.client.connection`) and the client's data converter stay allowed: they reach
no run. Those calls live in `durable_agents/client/`, the one place allowed to make them.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from temporalio.client import Client

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("durable_agents/cli", "durable_agents/servers")
NOT_REACHING_RUNS = frozenset({"connect", "config"})
"""`Client` methods that reach no run: making the connection, reading its settings."""
RAW_SERVICES = frozenset({"workflow_service", "operator_service", "test_service"})
"""The gRPC services under `Client`: every run is reachable through them."""


def raw_client_names() -> frozenset[str]:
    """The names of `temporalio.client.Client`'s public methods that reach runs (and its raw
    services)."""
    methods = {
        name
        for name, member in inspect.getmembers(Client)
        if not name.startswith("_") and inspect.isfunction(member)
    }
    return frozenset(methods - NOT_REACHING_RUNS) | RAW_SERVICES


def raw_client_uses(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, name) of each attribute in `source` named after a raw client method."""
    return [
        (node.lineno, node.attr)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr in names
    ]


def test_the_rule_knows_the_methods_that_reach_runs() -> None:
    names = raw_client_names()
    for name in ("get_workflow_handle", "list_workflows", "start_workflow", "count_workflows"):
        assert name in names
    assert {"connect", "config", "data_converter", "namespace"}.isdisjoint(names)


def test_the_rule_catches_what_chat_and_the_servers_did_before() -> None:
    """What `agent chat`, `RunControl.follow_turn`, the limits and the A2A task store did."""
    before = """
session = client.get_workflow_handle(session_id)
async for execution in self.client.list_workflows(query): ...
async for execution in self.control.agents.client.list_workflows(query): ...
handle = await agents.client.start_workflow("AgentWorkflow", payload, id=i, task_queue=q)
"""
    uses = raw_client_uses(before, raw_client_names())
    assert [name for _, name in uses] == [
        "get_workflow_handle",
        "list_workflows",
        "list_workflows",
        "start_workflow",
    ]


def test_no_module_of_the_cli_or_the_servers_reaches_runs_with_the_raw_client() -> None:
    names = raw_client_names()
    found: list[str] = []
    checked = 0
    for folder in CHECKED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            checked += 1
            uses = raw_client_uses(path.read_text(encoding="utf-8"), names)
            found += [f"{path.relative_to(ROOT)}:{line}: .{name}" for line, name in uses]
    assert checked > 40
    assert found == [], (
        "reach runs through durable_agents.client (AgentClient, RunHandle, SessionHandle), "
        "adding what it lacks there:\n" + "\n".join(found)
    )
