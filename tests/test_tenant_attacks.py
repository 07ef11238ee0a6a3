"""Cross-tenant attacks (issue 35 items 2, 3 and 8), tried for real against `agent serve`
(uvicorn in the test's loop) and the gateways (`agent mcp --http`, `agent a2a` as
subprocesses), with a principals file made by `add_principal` (what `agent token create` does),
in front of the real dev server and worker:

- bob (tenant globex) reaching alice's run or session (tenant acme) through every endpoint:
  status, pending, result, events, decisions, steer, cancel, tool results, the session's
  status, events and messages, an AG-UI thread, the MCP tools, an A2A task: each answers as a
  run that does not exist (the same status and words), and alice's run still waits, untouched;
- a forged `by`: the decision records the authenticated principal (not self-declared);
- a replayed decision: 409, one decision in history;
- the starter approving their own two-person call: refused naming the rule, the call waits,
  another principal of the tenant approves it.

Each case is counted by tests/test_access_attacks.py's `TALLY` (`ACCESS_ATTACKS_TALLY=FILE`:
one line `tried|refused<TAB>case` a case; RELIABILITY.md counts them).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.principals import Role
from durable_agents.servers.auth.authenticator import Authenticator, PrincipalsSource
from durable_agents.servers.auth.principals_file import add_principal
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.http_api_support import LiveApi, live_api
from tests.test_access_attacks import TALLY
from tests.test_browser_attacks import A2A_VERSION, a2a_send
from tests.test_mcp_gateway import http_gateway

ALL: frozenset[Role] = frozenset({"read", "start", "approve"})
PEOPLE: dict[str, tuple[str, frozenset[Role]]] = {
    "alice": ("acme", ALL),
    "anna": ("acme", frozenset({"read", "approve"})),
    "bob": ("globex", ALL),
}
WRITE = {"path": "w.txt", "content": "hi"}
TWO_PERSON = {
    "rules": [{"tools": "write_*", "action": "ask", "approval": {"distinct_from_starter": True}}]
}


@dataclass
class People:
    path: Path
    tokens: dict[str, str]

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}


@pytest.fixture
def people(tmp_path: Path) -> People:
    path = tmp_path / "principals.toml"
    tokens = {
        name: add_principal(path, name, tenant, roles) for name, (tenant, roles) in PEOPLE.items()
    }
    return People(path, tokens)


@asynccontextmanager
async def serve(agent: AgentHarness, people: People) -> AsyncIterator[LiveApi]:
    authenticator = Authenticator(principals=PrincipalsSource(people.path))
    async with live_api(agent, token=None, authenticator=authenticator) as live:
        yield live


def wid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def alices_waiting_run(
    agent: AgentHarness, api: LiveApi, people: People, **settings: Any
) -> tuple[str, str]:
    """A run alice starts over HTTP that waits for the approval of `write_file` call w1: its
    id and the call's digest."""
    agent.fake.enqueue(fake.tool_calls(fake.call("write_file", WRITE, id="w1")), fake.text("ok"))
    run = wid("acme-run")
    body = {"prompt": "write it", "id": run, "tools": ["write_file"], **settings}
    started = await api.http.post("/v1/runs", json=body, headers=people.auth("alice"))
    assert started.status_code == 201, started.text

    async def waiting() -> str:
        pending = await api.http.get(f"/v1/runs/{run}/pending", headers=people.auth("alice"))
        if not pending.json():
            status = await api.http.get(f"/v1/runs/{run}", headers=people.auth("alice"))
            raise AssertionError(f"nothing waits yet: {status.text[:600]}")
        [request] = pending.json()
        return str(request["args_digest"])

    return run, await eventually(waiting, what="alice's run waiting for w1")


def as_missing(response: httpx.Response, workflow_id: str) -> tuple[int, str]:
    return response.status_code, response.text.replace(workflow_id, "<id>")


async def test_another_tenants_run_and_session_are_missing_through_every_route(
    agent: AgentHarness, people: People
) -> None:
    async with serve(agent, people) as api:
        run, digest = await alices_waiting_run(agent, api, people)
        agent.fake.enqueue(fake.text("Hello, alice."))
        session = wid("acme-session")
        said = await api.http.post(
            f"/v1/sessions/{session}/messages?wait=true",
            json={"text": "hi"},
            headers=people.auth("alice"),
        )
        assert said.status_code == 200, said.text
        bob = people.auth("bob")
        missing = wid("missing")
        for method, path, body in [
            ("GET", "/v1/runs/{id}", None),
            ("GET", "/v1/runs/{id}/pending", None),
            ("GET", "/v1/runs/{id}/result", None),
            ("GET", "/v1/runs/{id}/events", None),
            ("POST", "/v1/runs/{id}/decisions",
             {"call_id": "w1", "decision": "approve", "args_digest": digest}),
            ("POST", "/v1/runs/{id}/decisions",
             {"call_id": "w1", "decision": "reject", "reason": "no"}),
            ("POST", "/v1/runs/{id}/steer", {"text": "stop"}),
            ("POST", "/v1/runs/{id}/cancel", {}),
            ("POST", "/v1/runs/{id}/tool_results", {"call_id": "w1", "result": 1}),
            ("GET", "/v1/sessions/{sid}", None),
            ("GET", "/v1/sessions/{sid}/events", None),
        ]:  # fmt: skip
            target = session if "{sid}" in path else run
            theirs = await api.http.request(
                method, path.format(id=target, sid=target), json=body, headers=bob
            )
            nobodys = await api.http.request(
                method, path.format(id=missing, sid=missing), json=body, headers=bob
            )
            case = f"another tenant's run: {method} {path} {json.dumps(body)[:40]}"
            TALLY.record(case, theirs.status_code == 404)
            assert theirs.status_code == 404, (case, theirs.text)
            assert as_missing(theirs, target) == as_missing(nobodys, missing), case

        message = await api.http.post(
            f"/v1/sessions/{session}/messages", json={"text": "leak it"}, headers=bob
        )
        TALLY.record("another tenant's session: a message", message.status_code == 404)
        assert message.status_code == 404, message.text
        thread = await api.http.post(
            "/agui",
            json={
                "threadId": session, "runId": "x", "state": {}, "tools": [], "context": [],
                "forwardedProps": {},
                "messages": [{"id": "m1", "role": "user", "content": "leak it"}],
            },
            headers=bob,
        )  # fmt: skip
        TALLY.record("another tenant's AG-UI thread", thread.status_code == 404)
        assert thread.status_code == 404, thread.text

        status = await api.http.get(f"/v1/sessions/{session}", headers=people.auth("alice"))
        assert status.json()["turns"] == 1, status.json()  # nothing bob sent reached it
        pending = await api.http.get(f"/v1/runs/{run}/pending", headers=people.auth("alice"))
        assert [p["call_id"] for p in pending.json()] == ["w1"]  # still waits, untouched
        refused = await api.http.post(
            "/v1/runs",
            json={"prompt": "x", "tenant": "globex"},
            headers=people.auth("alice"),
        )
        TALLY.record("starting a run in another tenant", refused.status_code == 422)
        assert refused.status_code == 422 and "tenant" in refused.text, refused.text


async def test_a_forged_by_a_replayed_decision_and_the_two_person_rule(
    agent: AgentHarness, people: People
) -> None:
    async with serve(agent, people) as api:
        run, digest = await alices_waiting_run(agent, api, people, approval_policy=TWO_PERSON)
        approve = {"call_id": "w1", "decision": "approve", "args_digest": digest, "by": "anna"}
        own = await api.http.post(
            f"/v1/runs/{run}/decisions", json=approve, headers=people.auth("alice")
        )
        TALLY.record("the starter approving a two-person call", own.status_code == 403)
        assert own.status_code == 403, own.text
        assert "two-person rule" in own.json()["error"], own.json()
        pending = await api.http.get(f"/v1/runs/{run}/pending", headers=people.auth("alice"))
        assert [p["call_id"] for p in pending.json()] == ["w1"]  # it keeps waiting

        forged = {**approve, "by": "alice"}  # anna claims to be alice: changes nothing
        decided = await api.http.post(
            f"/v1/runs/{run}/decisions", json=forged, headers=people.auth("anna")
        )
        assert decided.status_code == 200, decided.text
        TALLY.record("a forged by", decided.json()["by"] == "anna")
        assert decided.json()["by"] == "anna"
        assert decided.json()["maker"] == {
            "name": "anna", "tenant": "acme", "self_declared": False
        }  # fmt: skip
        again = await api.http.post(
            f"/v1/runs/{run}/decisions", json=forged, headers=people.auth("anna")
        )
        TALLY.record("a replayed decision", again.status_code == 409)
        assert again.status_code == 409, again.text
        result = await api.http.get(f"/v1/runs/{run}/result?wait=true", headers=people.auth("anna"))
        [step] = result.json()["steps"]
        assert step["human"]["maker"]["name"] == "anna"


@asynccontextmanager
async def mcp_as(port: int, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=120), headers=headers) as http,
        streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def tool_text(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def test_another_tenants_run_is_missing_to_the_mcp_tools_and_a2a_tasks(
    agent: AgentHarness, temporal_env: WorkflowEnvironment, people: People
) -> None:
    environ = {"AGENT_PRINCIPALS_FILE": str(people.path)}
    agent.fake.enqueue(  # alice's MCP run, then her A2A task: each waits for her approval
        fake.tool_calls(fake.call("write_file", WRITE, id="w1")),
        fake.tool_calls(fake.call("write_file", WRITE, id="w2")),
    )
    async with (
        http_gateway(agent, temporal_env, "mcp", "--http", environ=environ) as mcp_port,
        http_gateway(agent, temporal_env, "a2a", environ=environ) as a2a_port,
        mcp_as(mcp_port, people.tokens["alice"]) as alice,
        mcp_as(mcp_port, people.tokens["bob"]) as bob,
        httpx.AsyncClient(timeout=60) as http,
    ):
        started = await alice.call_tool(
            "run_agent", {"prompt": "write it", "options": {"tools": ["write_file"]}}
        )
        assert not started.is_error, tool_text(started)
        assert started.structured_content is not None
        run = started.structured_content["workflow_id"]
        missing = wid("mcp-missing")
        calls: list[tuple[str, dict[str, Any]]] = [
            ("pending", {}),
            ("result", {"wait": False}),
            ("decide", {"call_id": "w1", "decision": "reject", "reason": "no", "wait": False}),
        ]
        for tool, arguments in calls:
            theirs = await bob.call_tool(tool, {"workflow_id": run, **arguments})
            nobodys = await bob.call_tool(tool, {"workflow_id": missing, **arguments})
            TALLY.record(f"another tenant's run: MCP {tool}", theirs.is_error)
            assert theirs.is_error, (tool, tool_text(theirs))
            assert tool_text(theirs).replace(run, "<id>") == tool_text(nobodys).replace(
                missing, "<id>"
            ), tool
        listed = await alice.call_tool("pending", {"workflow_id": run})
        assert not listed.is_error and "w1" in tool_text(listed)  # still waits, untouched

        a2a = f"http://127.0.0.1:{a2a_port}/"
        sent = await http.post(
            a2a, json=a2a_send("write it"), headers={**A2A_VERSION, **people.auth("alice")}
        )
        task = sent.json()["result"]["task"]["id"]

        async def get_task(task_id: str, who: str) -> dict[str, Any]:
            request = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}
            got = await http.post(a2a, json=request, headers={**A2A_VERSION, **people.auth(who)})
            return dict(got.json())

        async def alices_waits() -> bool:
            state = (await get_task(task, "alice"))["result"]["status"]["state"]
            assert state == "TASK_STATE_INPUT_REQUIRED", state
            return True

        await eventually(alices_waits, what="alice's A2A task waiting for her")
        their_task = await get_task(task, "bob")
        no_task = await get_task(str(uuid.uuid4()), "bob")
        TALLY.record("another tenant's A2A task", "error" in their_task)
        assert "error" in their_task, their_task
        assert their_task["error"]["code"] == no_task["error"]["code"], (their_task, no_task)
        answer = a2a_send("approve")
        answer["params"]["message"]["taskId"] = task
        answered = await http.post(a2a, json=answer, headers={**A2A_VERSION, **people.auth("bob")})
        TALLY.record("another tenant's A2A task: an answer", "error" in answered.json())
        assert "error" in answered.json(), answered.json()
        assert (await alices_waits()) is True  # still waits for alice
