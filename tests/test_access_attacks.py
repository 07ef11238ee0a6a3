"""The access attack suite (issue 35 item 8): what a caller without the right credentials can
make the servers do, tried for real against `agent serve` (uvicorn, in the test's loop) and the
gateways (`agent mcp --http`, `agent a2a` as subprocesses), each in front of the real dev server
and worker, with a principals file made by `add_principal` (what `agent token create` does).

- no token, a wrong one, an expired one, one in the wrong place (query string, cookie, Basic):
  401 with `WWW-Authenticate: Bearer` on every route, and nothing read, started or decided;
- a principal without the role a route needs: 403 naming the role, and nothing done;
- a forged `by` (in the body, in a header): the decision records the authenticated principal;
- oversized and deeply nested bodies: 413 and 400, and nothing started;
- a flood of SSE connections: refused without a token; with one, the server still answers.

Each refusal is counted (`Tally`); with `ACCESS_ATTACKS_TALLY=FILE` each case tried is one
line `tried|refused<TAB>case` in FILE (the counts in RELIABILITY.md come from it).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.cli.main import run_cli
from durable_agents.contracts.principals import Role
from durable_agents.servers.auth.authenticator import Authenticator, PrincipalsSource
from durable_agents.servers.auth.principals_file import add_principal
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.http_api_support import LiveApi, live_api
from tests.test_browser_attacks import (
    A2A_VERSION,
    MCP_ACCEPT,
    MCP_INITIALIZE,
    a2a_send,
    absent,
    agui_input,
    wid,
)
from tests.test_mcp_gateway import http_gateway, text_of, workflow_ids

TENANT = "default"
CREW: dict[str, frozenset[Role]] = {
    "reader": frozenset({"read"}),
    "starter": frozenset({"start"}),
    "approver": frozenset({"approve", "read"}),
    "admin": frozenset({"admin"}),
}


@dataclass
class Crew:
    """A principals file and the tokens of its principals (`CREW`, and `expired`)."""

    path: Path
    tokens: dict[str, str]

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}


@pytest.fixture
def crew(tmp_path: Path) -> Crew:
    path = tmp_path / "principals.toml"
    tokens = {name: add_principal(path, name, TENANT, roles) for name, roles in CREW.items()}
    past = datetime.now(UTC) - timedelta(minutes=1)
    tokens["expired"] = add_principal(path, "expired", TENANT, frozenset({"admin"}), past)
    return Crew(path, tokens)


class Tally:
    """Counts the cases tried and refused (see the module docstring)."""

    def __init__(self) -> None:
        self.target = os.environ.get("ACCESS_ATTACKS_TALLY")

    def record(self, case: str, refused: bool) -> None:
        if self.target:
            with open(self.target, "a", encoding="utf-8") as out:
                out.write(f"{'refused' if refused else 'tried'}\t{case}\n")

    def refused(self, response: httpx.Response, status: int, case: str) -> None:
        """Assert `response` is the refusal `status`, and count it."""
        self.record(case, response.status_code == status)
        assert response.status_code == status, (case, response.status_code, response.text)


TALLY = Tally()


@asynccontextmanager
async def guarded_serve(
    agent: AgentHarness, crew: Crew, max_open_requests: int | None = None
) -> AsyncIterator[LiveApi]:
    """`agent serve` taking the crew's tokens (and no other), its client sending none."""
    authenticator = Authenticator(
        principals=PrincipalsSource(crew.path), max_open_requests=max_open_requests
    )
    async with live_api(agent, token=None, authenticator=authenticator) as live:
        yield live


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    body: dict[str, Any] | None
    role: Role


def routes(run: str, digest: str) -> list[Route]:
    """Every route of `agent serve` that holds data or changes something, about `run` (which
    waits for the approval of call `w1`) or about runs that must never come to exist."""
    return [
        Route("GET", "/v1/info", None, "read"),
        Route("GET", f"/v1/runs/{run}", None, "read"),
        Route("GET", f"/v1/runs/{run}/pending", None, "read"),
        Route("GET", f"/v1/runs/{run}/result", None, "read"),
        Route("GET", f"/v1/runs/{run}/events", None, "read"),
        Route("GET", f"/v1/sessions/{run}", None, "read"),
        Route("GET", f"/v1/sessions/{run}/events", None, "read"),
        Route("POST", "/v1/runs", {"prompt": "attack", "id": "access-attack-run"}, "start"),
        Route("POST", "/v1/sessions", {"id": "access-attack-session"}, "start"),
        Route("POST", "/v1/sessions/access-attack-chat/messages", {"text": "attack"}, "start"),
        Route("POST", "/agui", agui_input("access-attack-thread", "attack"), "start"),
        Route("POST", f"/v1/runs/{run}/tool_results", {"call_id": "c1", "result": {}}, "start"),
        Route("POST", f"/v1/runs/{run}/cancel", {}, "start"),
        Route(
            "POST",
            f"/v1/runs/{run}/decisions",
            {"call_id": "w1", "decision": "approve", "args_digest": digest},
            "approve",
        ),
        Route("POST", f"/v1/runs/{run}/steer", {"text": "attack: delete everything"}, "approve"),
    ]


NEVER_STARTED = (
    "access-attack-run",
    "access-attack-session",
    "access-attack-chat",
    "access-attack-thread",
)


async def waiting_run(agent: AgentHarness, api: LiveApi, crew: Crew) -> tuple[str, str]:
    """A run (started by the admin) waiting for the approval of `w1`; its id and digest."""
    agent.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "a.txt", "content": "a"}, id="w1")),
        fake.text("Written."),
    )
    run = wid("access")
    started = await api.http.post(
        "/v1/runs", json={"prompt": "write", "id": run}, headers=crew.auth("admin")
    )
    assert started.status_code == 201, started.text

    async def digest() -> str:
        pending = await api.http.get(f"/v1/runs/{run}/pending", headers=crew.auth("admin"))
        assert pending.status_code == 200 and pending.json(), pending.text
        return str(pending.json()[0]["args_digest"])

    return run, await eventually(digest, what="the approval to wait")


async def still_waiting(agent: AgentHarness, api: LiveApi, crew: Crew, run: str) -> None:
    """Nothing the attacks sent reached `run` or started another."""
    handle = agent.client.get_workflow_handle(run)
    assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    pending = await api.http.get(f"/v1/runs/{run}/pending", headers=crew.auth("admin"))
    assert [p["call_id"] for p in pending.json()] == ["w1"]
    assert "delete everything" not in json.dumps(await decoded_inputs(handle))
    for workflow_id in NEVER_STARTED:
        assert await absent(agent, workflow_id), f"{workflow_id} was started"


async def decoded_inputs(handle: WorkflowHandle[Any, Any]) -> list[Any]:
    """The JSON of every signal and update a run's history holds (payloads as sent)."""
    found: list[Any] = []
    async for event in handle.fetch_history_events():
        payloads: Any = []
        if event.HasField("workflow_execution_signaled_event_attributes"):
            payloads = event.workflow_execution_signaled_event_attributes.input.payloads
        elif event.HasField("workflow_execution_update_accepted_event_attributes"):
            accepted = event.workflow_execution_update_accepted_event_attributes
            payloads = accepted.accepted_request.input.args.payloads
        for payload in payloads:
            try:
                found.append(json.loads(payload.data))
            except ValueError:
                found.append(payload.data.decode("latin-1"))
    return found


async def request(api: LiveApi, route: Route, headers: dict[str, str]) -> httpx.Response:
    if route.body is None:
        return await api.http.request(route.method, route.path, headers=headers)
    return await api.http.request(route.method, route.path, json=route.body, headers=headers)


# -- missing, wrong and expired tokens -----------------------------------------------------------


def bad_credentials(crew: Crew) -> dict[str, dict[str, str]]:
    """Requests that carry no valid bearer token, as headers."""
    admin = crew.tokens["admin"]
    flipped = admin[:-1] + ("A" if admin[-1] != "A" else "B")
    basic = base64.b64encode(f"admin:{admin}".encode()).decode()
    return {
        "no Authorization": {},
        "bearer with no token": {"Authorization": "Bearer"},
        "wrong token": {"Authorization": "Bearer not-a-token-of-anyone-0123456789"},
        "last character changed": {"Authorization": f"Bearer {flipped}"},
        "a prefix of the token": {"Authorization": f"Bearer {admin[:20]}"},
        "the token's sha256 itself": {
            "Authorization": "Bearer " + hashlib.sha256(admin.encode()).hexdigest()
        },
        "expired principal": crew.auth("expired"),
        "Basic scheme": {"Authorization": f"Basic {basic}"},
        "token as a cookie": {"Cookie": f"token={admin}; Authorization=Bearer%20{admin}"},
        "forged principal headers": {
            "X-Forwarded-User": "admin",
            "X-Auth-Request-User": "admin",
            "Remote-User": "admin",
        },
    }


async def test_missing_wrong_and_expired_tokens_are_401_on_every_route(
    agent: AgentHarness, crew: Crew
) -> None:
    async with guarded_serve(agent, crew) as api:
        run, digest = await waiting_run(agent, api, crew)
        for route in routes(run, digest):
            for case, headers in bad_credentials(crew).items():
                answer = await request(api, route, headers)
                TALLY.refused(answer, 401, f"{case}: {route.method} {route.path}")
                challenge = answer.headers["www-authenticate"]
                assert challenge.startswith("Bearer"), challenge
                assert crew.tokens["admin"] not in answer.text
                if case == "expired principal":
                    assert "expired" in answer.json()["error"], answer.text
            query = f"{route.path}?access_token={crew.tokens['admin']}"
            in_query = await api.http.request(route.method, query, json=route.body)
            TALLY.refused(in_query, 401, f"token in the query string: {route.method} {query}")
        await still_waiting(agent, api, crew, run)
        assert (await api.http.get("/healthz")).status_code == 200  # public, holds nothing
        assert (await api.http.get("/")).status_code == 200  # the console asks for the token


# -- roles ---------------------------------------------------------------------------------------


async def test_a_principal_without_the_role_is_403_and_nothing_happens(
    agent: AgentHarness, crew: Crew
) -> None:
    async with guarded_serve(agent, crew) as api:
        run, digest = await waiting_run(agent, api, crew)
        for route in routes(run, digest):
            for name, roles in CREW.items():
                if route.role in roles or "admin" in roles:
                    continue
                answer = await request(api, route, crew.auth(name))
                TALLY.refused(answer, 403, f"{name} without {route.role}: {route.path}")
                assert f"needs the '{route.role}' role" in answer.json()["error"], answer.text
        await still_waiting(agent, api, crew, run)
        # the same decision from a principal that may approve goes through
        approve = Route(*routes(run, digest)[-2].__dict__.values())
        decided = await request(api, approve, crew.auth("approver"))
        assert decided.status_code == 200, decided.text


# -- a forged `by` -------------------------------------------------------------------------------


async def test_a_forged_by_records_the_authenticated_principal(
    agent: AgentHarness, crew: Crew
) -> None:
    async with guarded_serve(agent, crew) as api:
        run, digest = await waiting_run(agent, api, crew)
        forged = {**crew.auth("approver"), "X-Forwarded-User": "ceo", "By": "ceo"}
        decided = await api.http.post(
            f"/v1/runs/{run}/decisions",
            json={"call_id": "w1", "decision": "approve", "args_digest": digest, "by": "ceo"},
            headers=forged,
        )
        assert decided.status_code == 200, decided.text
        TALLY.record("a forged by (body field and headers) on a decision", True)
        handle = agent.client.get_workflow_handle(run)
        decisions = [
            data
            for data in await decoded_inputs(handle)
            if isinstance(data, dict) and data.get("call_id") == "w1"
        ]
        assert decisions, "the decision is not in the history"
        for data in decisions:  # signed by the server for this run (tests/test_signed_makers.py)
            maker = dict(data.get("maker") or {})
            assert len(maker.pop("signature", "")) == 64, data
            assert maker == {"name": "approver", "tenant": TENANT, "self_declared": False}, data
            assert data.get("by") in (None, "approver"), data


# -- body shapes ---------------------------------------------------------------------------------


async def test_oversized_and_deeply_nested_bodies_are_refused_with_or_without_a_token(
    agent: AgentHarness, crew: Crew
) -> None:
    deep = '{"prompt": "x", "id": "access-attack-run", "x": ' + "[" * 5000 + "]" * 5000 + "}"
    huge = json.dumps({"prompt": "x" * (300 * 1024), "id": "access-attack-run"})
    json_type = {"Content-Type": "application/json"}
    async with guarded_serve(agent, crew) as api:
        for who, auth in (("admin", crew.auth("admin")), ("anonymous", {})):
            for path in ("/v1/runs", "/agui", "/v1/sessions/access-attack-chat/messages"):
                nested = await api.http.post(path, content=deep, headers={**json_type, **auth})
                TALLY.refused(nested, 400 if auth else 401, f"{who} nested body: {path}")
                assert "Traceback" not in nested.text
                big = await api.http.post(path, content=huge, headers={**json_type, **auth})
                TALLY.refused(big, 413, f"{who} oversized body: {path}")
    for workflow_id in NEVER_STARTED:
        assert await absent(agent, workflow_id)


# -- a flood of SSE connections ------------------------------------------------------------------


FLOOD = 60


async def test_a_flood_of_sse_connections(agent: AgentHarness, crew: Crew) -> None:
    """Without a token each stream is 401 at once. With one, a principal may hold
    `max_open_requests` streams (here 60): the next request is 429 with `Retry-After`, while
    another principal is answered at once; once the streams close, it is answered again."""
    async with guarded_serve(agent, crew, max_open_requests=FLOOD) as api:
        run, _ = await waiting_run(agent, api, crew)
        path = f"/v1/runs/{run}/events"

        async def anonymous_stream() -> int:
            async with api.http.stream("GET", path) as response:
                return response.status_code

        statuses = await asyncio.gather(*(anonymous_stream() for _ in range(FLOOD)))
        for status in statuses:
            TALLY.record("an SSE stream without a token", status == 401)
        assert statuses == [401] * FLOOD

        opened = asyncio.Event()
        count = 0

        async def reader_stream() -> None:
            nonlocal count
            async with api.http.stream("GET", path, headers=crew.auth("reader")) as response:
                assert response.status_code == 200
                count += 1
                if count == FLOOD:
                    opened.set()
                async for _ in response.aiter_lines():
                    pass

        streams = [asyncio.create_task(reader_stream()) for _ in range(FLOOD)]
        await asyncio.wait_for(opened.wait(), 60)
        for extra in (path, f"/v1/runs/{run}"):
            over = await api.http.get(extra, headers=crew.auth("reader"))
            TALLY.refused(over, 429, f"request {FLOOD + 1} of one principal: {extra}")
            assert over.headers["retry-after"] == "1", over.headers
        started = asyncio.get_running_loop().time()
        other = await api.http.get(f"/v1/runs/{run}", headers=crew.auth("approver"))
        assert other.status_code == 200, other.text
        assert asyncio.get_running_loop().time() - started < 5
        for stream in streams:
            stream.cancel()
        await asyncio.gather(*streams, return_exceptions=True)

        async def answered_again() -> bool:
            again = await api.http.get(f"/v1/runs/{run}", headers=crew.auth("reader"))
            assert again.status_code == 200, again.text
            return True

        await eventually(answered_again, what="the reader's streams to be closed")
        await still_waiting(agent, api, crew, run)


# -- the gateways --------------------------------------------------------------------------------


async def test_the_gateways_take_the_principals_and_check_roles(
    agent: AgentHarness, temporal_env: WorkflowEnvironment, crew: Crew
) -> None:
    environ = {"AGENT_PRINCIPALS_FILE": str(crew.path)}
    async with (
        http_gateway(agent, temporal_env, "a2a", environ=environ) as a2a_port,
        http_gateway(agent, temporal_env, "mcp", "--http", environ=environ) as mcp_port,
        httpx.AsyncClient(timeout=60) as http,
    ):
        a2a = f"http://127.0.0.1:{a2a_port}/"
        mcp = f"http://127.0.0.1:{mcp_port}/mcp"
        for case, headers in bad_credentials(crew).items():
            sent = await http.post(a2a, json=a2a_send("hi"), headers={**A2A_VERSION, **headers})
            TALLY.refused(sent, 401, f"{case}: A2A SendMessage")
            assert sent.headers["www-authenticate"].startswith("Bearer")
            init = await http.post(mcp, json=MCP_INITIALIZE, headers={**MCP_ACCEPT, **headers})
            TALLY.refused(init, 401, f"{case}: MCP initialize")
        card = await http.get(f"{a2a}.well-known/agent-card.json")
        assert card.status_code == 200, card.text  # public: what the agent does, no data
        by_reader = await http.post(
            a2a, json=a2a_send("hi"), headers={**A2A_VERSION, **crew.auth("reader")}
        )
        assert by_reader.status_code == 200, by_reader.text  # JSON-RPC errors come in a 200
        TALLY.record("reader starting an A2A task", "error" in by_reader.json())
        assert "needs the 'start' role" in by_reader.json()["error"]["message"], by_reader.json()
        assert await workflow_ids(temporal_env, agent.task_queue) == []
        async with (
            httpx2.AsyncClient(headers=crew.auth("reader"), timeout=60) as as_reader,
            streamable_http_client(mcp, http_client=as_reader) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for tool, arguments in (
                ("run_agent", {"prompt": "attack", "workflow_id": "access-attack-run"}),
                ("send_message", {"session_id": "access-attack-chat", "text": "attack"}),
                ("decide", {"workflow_id": "r", "call_id": "w1", "decision": "approve"}),
            ):
                result = await session.call_tool(tool, arguments)
                TALLY.record(f"reader calling the MCP tool {tool}", result.is_error)
                assert result.is_error and "needs the '" in text_of(result), text_of(result)
            listed = await session.call_tool("pending", {"workflow_id": "access-attack-run"})
            assert "needs the" not in text_of(listed)  # reading is the reader's role
        assert await workflow_ids(temporal_env, agent.task_queue) == []
        agent.fake.enqueue(fake.text("Hello from A2A."))
        own = await http.post(
            a2a, json=a2a_send("hi"), headers={**A2A_VERSION, **crew.auth("starter")}
        )
        assert "error" not in own.json(), own.json()
        assert await eventually(lambda: workflow_ids(temporal_env, agent.task_queue))


@pytest.mark.parametrize("command", [["serve"], ["a2a"], ["mcp", "--http"]])
def test_no_server_listens_beyond_loopback_without_credentials(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AGENT_PRINCIPALS_FILE", "AGENT_OIDC_ISSUER", "AGENT_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    code = run_cli([*command, "--host", "0.0.0.0", "--port", "1"])  # before connecting
    TALLY.record(f"agent {' '.join(command)} --host 0.0.0.0 without credentials", code == 4)
    assert code == 4
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "refusing to listen on 0.0.0.0" in line and "AGENT_PRINCIPALS_FILE" in line, line


def test_a_bad_principals_file_stops_the_server_naming_the_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "principals.toml"
    path.write_text(
        '[[principal]]\nname = "ci"\ntoken_sha256 = "abc"\ntenant = "acme"\nroles = ["start"]\n'
    )
    monkeypatch.setenv("AGENT_PRINCIPALS_FILE", str(path))
    assert run_cli(["a2a", "--port", "1"]) == 4
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "principal 'ci'" in line and "token_sha256" in line, line


# -- web hygiene ---------------------------------------------------------------------------------

CONSOLE_ORIGIN = "https://console.example"


async def test_security_headers_and_the_cors_allow_list(agent: AgentHarness, crew: Crew) -> None:
    authenticator = Authenticator(principals=PrincipalsSource(crew.path))
    async with live_api(
        agent, token=None, authenticator=authenticator, cors_origins=(CONSOLE_ORIGIN,)
    ) as api:
        console = await api.http.get("/")
        policy = console.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy, policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        script = await api.http.get("/static/console.js")
        assert script.headers["x-content-type-options"] == "nosniff"
        for path, auth in (("/v1/info", crew.auth("reader")), ("/v1/info", {})):
            data = await api.http.get(path, headers=auth)
            assert data.headers["content-security-policy"].startswith("default-src 'none'")
            assert data.headers["x-frame-options"] == "DENY"
            assert data.headers["referrer-policy"] == "no-referrer"
        assert "set-cookie" not in console.headers
        preflight = {
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        }
        allowed = await api.http.options(
            "/v1/runs", headers={**preflight, "Origin": CONSOLE_ORIGIN}
        )
        assert allowed.headers["access-control-allow-origin"] == CONSOLE_ORIGIN
        assert "access-control-allow-credentials" not in allowed.headers
        for origin in ("https://evil.example", "null", CONSOLE_ORIGIN + ".evil.example"):
            other = await api.http.options("/v1/runs", headers={**preflight, "Origin": origin})
            TALLY.refused(other, 400, f"CORS preflight from {origin}")  # Starlette's answer
            assert "access-control-allow-origin" not in other.headers
            sent = await api.http.post(
                "/v1/runs",
                json={"prompt": "x", "id": "access-attack-run"},
                headers={**crew.auth("admin"), "Origin": origin},
            )
            TALLY.refused(sent, 403, f"a start from the web origin {origin}, with a token")
    assert await absent(agent, "access-attack-run")


def test_cors_origins_must_be_listed_one_by_one() -> None:
    from durable_agents.servers.http_api.config import ConfigError, ServeConfig

    for origins in ("*", "https://console.example/path", "console.example", "ftp://x"):
        with pytest.raises(ConfigError, match="--cors-origin"):
            ServeConfig.from_env({"AGENT_API_CORS_ORIGINS": origins})
    config = ServeConfig.from_env({"AGENT_API_CORS_ORIGINS": "https://a.example, http://b:8080/"})
    assert config.cors_origins == ("http://b:8080", "https://a.example")
