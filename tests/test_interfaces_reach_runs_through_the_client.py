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

Nor may they hold one of temporalio's raw workflow handles (`WorkflowHandle`, or its alias
`WorkflowRun`) and call it: a call of a `WorkflowHandle` method that the typed client does not
have (`signal`, `query`, `execute_update`, `start_update`, `fetch_history`, ...) is refused on
any receiver, and one it shares (`describe`, `cancel`, `terminate`, `result`) on the raw handle
a `RunHandle` exposes (`run.workflow.describe()`); naming either type is refused too. Such a
call skips `RunHandle`'s checks (run still going, the call still pending, tenant, owner) and
its typed errors (`durable_agents.errors`).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from temporalio.client import Client, WorkflowHandle

from durable_agents.client import AgentClient, RunHandle, SessionHandle

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("durable_agents/cli", "durable_agents/servers")
NOT_REACHING_RUNS = frozenset({"connect", "config"})
"""`Client` methods that reach no run: making the connection, reading its settings."""
RAW_SERVICES = frozenset({"workflow_service", "operator_service", "test_service"})
"""The gRPC services under `Client`: every run is reachable through them."""
RAW_HANDLE_TYPES = frozenset({"WorkflowHandle", "WorkflowRun"})
"""temporalio's workflow handle, and `durable_agents.client.connection`'s alias of it."""
EXPOSED_RAW_HANDLE = "workflow"
"""`RunHandle.workflow`: the temporalio handle under a typed one."""


def public_functions(cls: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and inspect.isfunction(member)
    }


def raw_handle_methods() -> tuple[frozenset[str], frozenset[str]]:
    """`WorkflowHandle`'s methods: (those the typed client lacks, those it shares by name)."""
    methods = public_functions(WorkflowHandle)
    typed = {n for cls in (RunHandle, SessionHandle, AgentClient) for n in dir(cls)}
    return frozenset(methods - typed), frozenset(methods & typed)


def raw_handle_uses(source: str) -> list[tuple[int, str]]:
    """(line, what) of each raw workflow handle use in `source`: a call of a handle-only method,
    a call of a shared one on `<x>.workflow`, a name of the handle's type."""
    only, shared = raw_handle_methods()
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, receiver = node.func.attr, node.func.value
            on_raw = isinstance(receiver, ast.Attribute) and receiver.attr == EXPOSED_RAW_HANDLE
            if method in only or (method in shared and on_raw):
                found.append((node.lineno, method))
        elif isinstance(node, ast.Name) and node.id in RAW_HANDLE_TYPES:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr in RAW_HANDLE_TYPES:
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom):
            names = [alias.name for alias in node.names if alias.name in RAW_HANDLE_TYPES]
            found += [(node.lineno, name) for name in names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # a string annotation (`from __future__ import annotations` keeps none as str)
            found += [(node.lineno, t) for t in RAW_HANDLE_TYPES if node.value == t]
    return sorted(found)


def modules() -> list[Path]:
    """The checked modules, under `ROOT` as it is when called."""
    return [path for folder in CHECKED for path in sorted((ROOT / folder).rglob("*.py"))]


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


def test_the_rule_knows_the_raw_handle_methods() -> None:
    only, shared = raw_handle_methods()
    assert {"signal", "query", "execute_update", "start_update", "fetch_history"} <= only
    assert {"describe", "cancel", "terminate", "result"} <= shared


def test_the_rule_catches_the_raw_handles_the_live_view_used_before() -> None:
    """What `agent run`, `watch` and `chat`'s answerer and live view did (issue 33's review)."""
    before = """
from durable_agents.client.connection import WorkflowRun
async def answer(handle: WorkflowRun, payload, run) -> None:
    await handle.signal("reply", payload)
    await handle.execute_update("decide", payload, result_type=HumanDecision)
    await self.handle.query("status", result_type=AgentStatus, rpc_timeout=QUERY_TIMEOUT)
    await run.workflow.describe()
    await run.workflow.cancel()
    await run.describe()
    await run.cancel()
"""
    assert raw_handle_uses(before) == [
        (2, "WorkflowRun"),
        (3, "WorkflowRun"),
        (4, "signal"),
        (5, "execute_update"),
        (6, "query"),
        (7, "describe"),
        (8, "cancel"),
    ]


def test_no_module_of_the_cli_or_the_servers_calls_a_raw_workflow_handle() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in modules()
        for line, what in raw_handle_uses(path.read_text(encoding="utf-8"))
    ]
    assert found == [], (
        "reach runs through RunHandle / SessionHandle (durable_agents.client), adding the "
        "typed method it lacks there:\n" + "\n".join(found)
    )


def test_no_module_of_the_cli_or_the_servers_reaches_runs_with_the_raw_client() -> None:
    names = raw_client_names()
    found: list[str] = []
    checked = 0
    for path in modules():
        checked += 1
        uses = raw_client_uses(path.read_text(encoding="utf-8"), names)
        found += [f"{path.relative_to(ROOT)}:{line}: .{name}" for line, name in uses]
    assert checked > 40
    assert found == [], (
        "reach runs through durable_agents.client (AgentClient, RunHandle, SessionHandle), "
        "adding what it lacks there:\n" + "\n".join(found)
    )
