"""What a web page the user visits can make their browser do to the servers on their laptop
(issue 40), tried for real: `agent serve` as it runs by default (loopback, no token) through
uvicorn, and `agent a2a` and `agent mcp --http` as subprocesses, each in front of the real dev
server and worker.

- cross-site requests: the simple requests a browser sends without a preflight (text/plain, a
  form, no Content-Type) are 415 on every route that changes something, and a request from
  another web origin is 403; the attack of the issue (a text/plain POST to `/agui` that put a
  message into a session) and the cross-site cancel reach nothing;
- DNS rebinding: a `Host` the server is not served under is 421 (a page rebound to 127.0.0.1
  read what waits with its digest, and started a run through A2A);
- oversized header values and deep nesting are 400, never 500.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from durable_agents.cli.errors import CLI_ERROR
from durable_agents.cli.main import run_cli
from durable_agents.servers.request_guards import GuardSettings, allowed_host_names
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.http_api_support import LiveApi, live_api
from tests.test_mcp_gateway import http_gateway, workflow_ids

EVIL = "http://evil.example"
INJECTED = "injected by another web page"


@asynccontextmanager
async def default_serve(agent: AgentHarness, **overrides: Any) -> AsyncIterator[LiveApi]:
    """`agent serve` as it starts by default: loopback, no token, no CORS origins."""
    async with live_api(agent, token=None, cors_origins=(), **overrides) as live:
        yield live


def wid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def agui_input(thread: str, text: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": "x",
        "state": {},
        "messages": [{"id": "m1", "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def simple_requests(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The requests a browser sends cross-site without a preflight, as httpx arguments:
    the JSON text as text/plain, a form (urlencoded and multipart), and no Content-Type."""
    text = json.dumps(body)
    return {
        "text/plain": {"content": text, "headers": {"Content-Type": "text/plain"}},
        "urlencoded form": {
            "content": "json=" + text,
            "headers": {"Content-Type": "application/x-www-form-urlencoded"},
        },
        "multipart form": {"files": {"json": (None, text)}},
        "no Content-Type": {"content": text},
        "empty, no Content-Type": {},
    }


async def absent(agent: AgentHarness, workflow_id: str) -> bool:
    try:
        await agent.client.get_workflow_handle(workflow_id).describe()
    except RPCError:
        return True
    return False


# -- agent serve: cross-site requests -----------------------------------------------------------


async def test_a_text_plain_post_from_another_page_puts_nothing_in_a_session(
    agent: AgentHarness,
) -> None:
    """The attack of issue 40, item 1: the curl of the issue, then the same without `Origin`."""
    agent.fake.enqueue(fake.text("Hello."), fake.text("Taken."), fake.text("Taken."))
    session = wid("sess")
    async with default_serve(agent) as api:
        first = await api.http.post(
            f"/v1/sessions/{session}/messages?wait=true", json={"text": "hi"}
        )
        assert first.status_code == 200, first.text
        body = json.dumps(agui_input(session, INJECTED))
        cross_site = await api.http.post(
            "/agui", content=body, headers={"Content-Type": "text/plain", "Origin": EVIL}
        )
        assert cross_site.status_code == 403, cross_site.text
        assert EVIL in cross_site.json()["error"]
        no_origin = await api.http.post(
            "/agui", content=body, headers={"Content-Type": "text/plain"}
        )
        assert no_origin.status_code == 415, no_origin.text
        assert "Content-Type: application/json" in no_origin.json()["error"]
        await asyncio.sleep(1)  # time for a message that got in to reach the model
        status = (await api.http.get(f"/v1/sessions/{session}")).json()
        assert status["turns"] == 1, status
    assert not any(INJECTED in json.dumps(r.messages) for r in agent.fake.requests)
    history = await agent.client.get_workflow_handle(session).fetch_history()
    assert INJECTED not in history.to_json()


STATE_CHANGING: list[tuple[str, dict[str, Any]]] = [
    ("/v1/runs", {"prompt": "started by another page", "id": "attack-run"}),
    ("/v1/sessions", {"id": "attack-session"}),
    ("/v1/sessions/attack-chat/messages", {"text": "started by another page"}),
    ("/v1/runs/attack-run/decisions", {"call_id": "w1", "decision": "approve"}),
    ("/v1/runs/attack-run/tool_results", {"call_id": "c1", "result": {}}),
    ("/v1/runs/attack-run/steer", {"text": "do something else"}),
    ("/v1/runs/attack-run/cancel", {}),
    ("/agui", agui_input("attack-thread", "started by another page")),
]


async def test_every_route_that_changes_something_refuses_simple_requests(
    agent: AgentHarness,
) -> None:
    async with default_serve(agent) as api:
        for path, body in STATE_CHANGING:
            for kind, request in simple_requests(body).items():
                refused = await api.http.post(path, **request)
                assert refused.status_code == 415, (path, kind, refused.text)
                assert "must be JSON" in refused.json()["error"], (path, kind)
                headers = {**request.get("headers", {}), "Origin": EVIL}
                cross = await api.http.post(path, **{**request, "headers": headers})
                assert cross.status_code == 403, (path, kind, cross.text)
            json_from_evil = await api.http.post(path, json=body, headers={"Origin": EVIL})
            assert json_from_evil.status_code == 403, (path, json_from_evil.text)
    for workflow_id in ("attack-run", "attack-session", "attack-chat", "attack-thread"):
        assert await absent(agent, workflow_id), f"{workflow_id} was started"


async def test_a_cross_site_cancel_leaves_the_run_running(agent: AgentHarness) -> None:
    """Attack 3: an empty form POST to cancel from another origin (202, CANCELED before)."""
    agent.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"))
    )
    workflow_id = wid("cancel")
    async with default_serve(agent) as api:
        started = await api.http.post("/v1/runs", json={"prompt": "write", "id": workflow_id})
        assert started.status_code == 201, started.text

        async def waiting() -> list[Any]:
            pending: list[Any] = (await api.http.get(f"/v1/runs/{workflow_id}/pending")).json()
            assert pending
            return pending

        await eventually(waiting, what="the approval to wait")
        path = f"/v1/runs/{workflow_id}/cancel"
        form = {"Content-Type": "application/x-www-form-urlencoded", "Origin": EVIL}
        assert (await api.http.post(path, content=b"", headers=form)).status_code == 403
        assert (await api.http.post(path)).status_code == 415  # empty, no Content-Type
        handle = agent.client.get_workflow_handle(workflow_id)
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
        own = await api.http.post(path, headers={"Content-Type": "application/json"})
        assert own.status_code == 202, own.text  # JSON with no body: still a cancel
        same_origin = await api.http.post(path, json={}, headers={"Origin": api.url})
        assert same_origin.status_code in (202, 409), same_origin.text


# -- agent serve: DNS rebinding -----------------------------------------------------------------


async def test_a_rebound_host_reads_and_decides_nothing(agent: AgentHarness) -> None:
    """Attack 2: `Host: attacker.example:PORT` read what waits, with its digest."""
    agent.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1"))
    )
    workflow_id = wid("rebind")
    async with default_serve(agent, allowed_hosts=("agents.internal",)) as api:
        await api.http.post("/v1/runs", json={"prompt": "write", "id": workflow_id})

        async def digest() -> str:
            pending = (await api.http.get(f"/v1/runs/{workflow_id}/pending")).json()
            assert pending, "nothing waits yet"
            return str(pending[0]["args_digest"])

        args_digest = await eventually(digest, what="the approval to wait")
        port = api.url.rsplit(":", 1)[1]
        rebound = {"Host": f"attacker.example:{port}"}
        read = await api.http.get(f"/v1/runs/{workflow_id}/pending", headers=rebound)
        assert read.status_code == 421, read.text
        assert args_digest not in read.text
        assert "attacker.example" in read.json()["error"]
        same_origin = {**rebound, "Origin": f"http://attacker.example:{port}"}
        decide = await api.http.post(
            f"/v1/runs/{workflow_id}/decisions",
            json={"call_id": "w1", "decision": "approve", "args_digest": args_digest},
            headers=same_origin,
        )
        assert decide.status_code == 421, decide.text
        assert (await api.http.get("/healthz", headers=rebound)).status_code == 421
        for served in (f"localhost:{port}", f"127.0.0.1:{port}", f"agents.internal:{port}"):
            ok = await api.http.get(f"/v1/runs/{workflow_id}/pending", headers={"Host": served})
            assert ok.status_code == 200, (served, ok.text)
        assert len((await api.http.get(f"/v1/runs/{workflow_id}/pending")).json()) == 1
    await agent.client.get_workflow_handle(workflow_id).terminate("test over")


# -- agent serve: header and body shapes --------------------------------------------------------


async def test_oversized_headers_and_deep_nesting_are_400(agent: AgentHarness) -> None:
    deep = '{"threadId": "t", "x": ' + "[" * 5000 + "]" * 5000 + "}"
    async with default_serve(agent) as api:
        for path in ("/agui", "/v1/runs", "/v1/sessions/deep-chat/messages"):
            nested = await api.http.post(
                path, content=deep, headers={"Content-Type": "application/json"}
            )
            assert nested.status_code == 400, (path, nested.text)
            assert "Traceback" not in nested.text
        for method, path in (("GET", "/v1/runs/r"), ("POST", "/v1/runs"), ("POST", "/agui")):
            big = await api.http.request(method, path, json={}, headers={"X-Padding": "a" * 9000})
            assert big.status_code == 400, (method, path, big.text)
            assert "x-padding" in big.json()["error"]
    assert await absent(agent, "deep-chat")


# -- the gateways -------------------------------------------------------------------------------


def a2a_send(text: str) -> dict[str, Any]:
    """A JSON-RPC `SendMessage` as a page would write it by hand."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"text": text}],
            },
            "configuration": {"returnImmediately": True},
        },
    }


A2A_VERSION = {"A2A-Version": "1.0"}


def deep_json_rpc(method: str) -> str:
    """A JSON-RPC request whose params nest 5000 arrays deep."""
    params = '{"x": ' + "[" * 5000 + "]" * 5000 + "}"
    return f'{{"jsonrpc": "2.0", "id": 1, "method": "{method}", "params": {params}}}'


async def test_a2a_refuses_rebound_hosts_other_origins_and_simple_requests(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    """Attack 2 through A2A: a rebound page's `SendMessage` started a run."""
    agent.fake.enqueue(fake.text("Hello from A2A."))
    async with (
        http_gateway(agent, temporal_env, "a2a") as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http,
    ):
        rebound = {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}"}
        attack = await http.post("/", json=a2a_send("hi"), headers={**A2A_VERSION, **rebound})
        assert attack.status_code == 421, attack.text
        card = await http.get("/.well-known/agent-card.json", headers=rebound)
        assert card.status_code == 421
        cross = await http.post("/", json=a2a_send("hi"), headers={"Origin": EVIL, **A2A_VERSION})
        assert cross.status_code == 403, cross.text
        for kind, request in simple_requests(a2a_send("hi")).items():
            refused = await http.post("/", **request)
            assert refused.status_code == 415, (kind, refused.text)
        big = await http.get("/.well-known/agent-card.json", headers={"X-Padding": "a" * 9000})
        assert big.status_code == 400, big.text
        json_type = {"Content-Type": "application/json", **A2A_VERSION}
        nested = await http.post("/", content=deep_json_rpc("SendMessage"), headers=json_type)
        assert nested.status_code == 400, nested.text  # was a JSON-RPC internal error
        assert "nested too deeply" in nested.json()["error"]
        huge = await http.post("/", content=b" " * (5 * 1024 * 1024), headers=json_type)
        assert huge.status_code == 413, huge.text
        assert await workflow_ids(temporal_env, agent.task_queue) == []
        # the same request, as the server's own client sends it, starts a run
        own = await http.post("/", json=a2a_send("hi"), headers=A2A_VERSION)
        assert own.status_code == 200, own.text
        assert "error" not in own.json(), own.json()
        assert await eventually(lambda: workflow_ids(temporal_env, agent.task_queue))


MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "a web page", "version": "1"},
    },
}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


async def test_mcp_http_refuses_rebound_hosts_other_origins_and_simple_requests(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    """The MCP SDK answered 421 already; it let any port of localhost in as an origin, and a
    body that is not JSON was 400."""
    async with (
        http_gateway(agent, temporal_env, "mcp", "--http") as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http,
    ):
        rebound = await http.post(
            "/mcp", json=MCP_INITIALIZE, headers={**MCP_ACCEPT, "Host": f"attacker.example:{port}"}
        )
        assert rebound.status_code == 421, rebound.text
        for origin in (EVIL, "http://localhost:1", "null"):
            cross = await http.post(
                "/mcp", json=MCP_INITIALIZE, headers={**MCP_ACCEPT, "Origin": origin}
            )
            assert cross.status_code == 403, (origin, cross.text)
        for kind, request in simple_requests(MCP_INITIALIZE).items():
            headers = {**MCP_ACCEPT, **request.get("headers", {})}
            refused = await http.post("/mcp", **{**request, "headers": headers})
            assert refused.status_code == 415, (kind, refused.text)
            assert "Content-Type: application/json" in refused.json()["error"]
        big = await http.post(
            "/mcp", json=MCP_INITIALIZE, headers={**MCP_ACCEPT, "X-Padding": "a" * 9000}
        )
        assert big.status_code == 400, big.text
        nested = await http.post(
            "/mcp",
            content=deep_json_rpc("initialize"),
            headers={**MCP_ACCEPT, "Content-Type": "application/json"},
        )
        assert nested.status_code == 400, nested.text
        own = await http.post(
            "/mcp",
            json=MCP_INITIALIZE,
            headers={**MCP_ACCEPT, "Origin": f"http://127.0.0.1:{port}"},
        )
        assert own.status_code == 200, own.text


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8000", True),
        ("localhost:8000", True),
        ("LOCALHOST.:8000", True),
        ("[::1]:8000", True),
        ("localhost", True),
        ("attacker.example:8000", False),
        ("127.0.0.1.attacker.example", False),
        ("localhost.attacker.example:8000", False),
        ("", False),
    ],
)
def test_host_names(host: str, allowed: bool) -> None:
    settings = GuardSettings(allowed_host_names("127.0.0.1"))
    assert settings.host_allowed(host) is allowed


# -- ids ----------------------------------------------------------------------------------------

UNSAFE_IDS = {
    "NUL": "run\x00x",
    "RTL override": "run-\u202etxt.exe",
    "a path": "../../etc/passwd",
    "a line break": "run\nx",
    "a space": "my run",
    "201 characters": "r" * 201,
}


async def test_unsafe_ids_are_422_and_reach_nothing(agent: AgentHarness) -> None:
    """Issue 40's smaller finding: NUL, an RTL override and `../../etc/passwd` were taken as
    run ids and shown raw."""
    async with default_serve(agent) as api:
        for name, unsafe in UNSAFE_IDS.items():
            quoted = quote(unsafe, safe="")
            for method, path, body in [
                ("GET", f"/v1/runs/{quoted}", None),
                ("GET", f"/v1/runs/{quoted}/pending", None),
                ("POST", f"/v1/runs/{quoted}/cancel", {}),
                ("POST", f"/v1/sessions/{quoted}/messages", {"text": "hi"}),
                ("GET", f"/v1/sessions/{quoted}/events", None),
                ("POST", "/v1/runs", {"prompt": "hi", "id": unsafe}),
                ("POST", "/v1/sessions", {"id": unsafe}),
                ("POST", "/agui", agui_input(unsafe, "hi")),
            ]:
                response = await api.http.request(method, path, json=body)
                assert response.status_code == 422, (name, method, path, response.text)
                error = response.json()["error"]
                assert "an id" in error, (name, path, error)
                assert unsafe not in error or name == "a path", (name, path, error)
        fine = await api.http.get("/v1/runs/chat-1/turn-3@host:1.x")
        assert fine.status_code == 404, fine.text  # a safe id: looked up, not there
    listed = [w.id async for w in agent.client.list_workflows(f'TaskQueue = "{agent.task_queue}"')]
    assert listed == []


@pytest.mark.parametrize("unsafe", ["../../etc/passwd", "run-\u202etxt", "r" * 201])
def test_the_agent_cli_starts_nothing_under_an_unsafe_id(
    unsafe: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["run", "hi", "--id", unsafe], ["chat", unsafe]):
        with pytest.raises(SystemExit) as exited:
            run_cli(argv)  # a usage error: refused before connecting to anything
        assert exited.value.code == CLI_ERROR
        assert "an id" in capsys.readouterr().err
