"""Limits per principal on every start path (issue 35 item 4): `AgentClient` checks them at each
start, so `agent serve` (runs, sessions, a session's messages, AG-UI), `agent mcp --http`
(`run_agent`, `send_message`) and `agent a2a` (`SendMessage`, streaming and not) refuse a
principal past its limit alike, before anything starts, and let another principal through.

Real servers in front of the real dev server and worker (the real `openai` client against the
fake model server): `agent serve` in the test's loop, the gateways as subprocesses, with one
principals file; reached by clients nobody here wrote: httpx, the official MCP client, a2a-sdk's
client.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_message_text
from a2a.types.a2a_pb2 import StreamResponse, TaskState
from temporalio.testing import WorkflowEnvironment

from durable_agents.client import AgentClient
from durable_agents.errors import RunNotFound
from durable_agents.servers.auth.authenticator import Authenticator, PrincipalsSource
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.http_api_support import live_api
from tests.test_a2a_gateway import user_message
from tests.test_mcp_gateway import http_gateway
from tests.test_start_limits import principals_file
from tests.test_tenant_attacks import mcp_as, tool_text


@asynccontextmanager
async def a2a_as(port: int, token: str, *, streaming: bool) -> AsyncIterator[Client]:
    """a2a-sdk's own client (JSON-RPC) with the principal's bearer token."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=httpx.Timeout(60, read=120), headers=headers) as http:
        client = await create_client(
            f"http://127.0.0.1:{port}/", ClientConfig(streaming=streaming, httpx_client=http)
        )
        try:
            yield client
        finally:
            await client.close()


def agui_input(thread: str, text: str) -> dict[str, Any]:
    return {
        "threadId": thread, "runId": uuid.uuid4().hex, "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{"id": "m1", "role": "user", "content": text}],
    }  # fmt: skip


def final_state(events: list[StreamResponse]) -> tuple[int, str]:
    """The task's last state and its message's text (a task, or the last status update)."""
    last = events[-1]
    status = last.task.status if last.HasField("task") else last.status_update.status
    return status.state, get_message_text(status.message)


async def test_a_principal_past_its_limit_is_refused_on_every_start_path(
    agent: AgentHarness, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    path, tokens = principals_file(tmp_path, "{ tokens_per_day = 100 }")
    text = path.read_text()
    names = {who: re.findall(rf'name = "({who}-\w+)"', text)[0] for who in ("alice", "bob")}
    new = uuid.uuid4().hex[:8]  # (the dev server is the whole test session's)
    agent.fake.enqueue(fake.text("hello alice", usage=(90, 30)))
    agent.fake.enqueue(*(fake.text(f"answer {n}") for n in range(12)))
    alice, bob = ({"Authorization": f"Bearer {tokens[who]}"} for who in ("alice", "bob"))
    refusal = re.compile(  # a rolling day: the test may take its time on a busy machine
        rf"the runs '{names['alice']}' started in the last 24 hours used 1\d\d tokens; its "
        r"limit is 100 a day; try again in (\d+) s"
    )
    authenticator = Authenticator(principals=PrincipalsSource(path))
    environ = {"AGENT_PRINCIPALS_FILE": str(path)}
    async with live_api(agent, token=None, authenticator=authenticator) as api:
        session = f"alice-session-{uuid.uuid4().hex[:8]}"
        said = await api.http.post(
            f"/v1/sessions/{session}/messages?wait=true", json={"text": "hi"}, headers=alice
        )  # her one start: a session whose first turn spends 120 tokens
        assert said.status_code == 200, said.text

        http_refusals = {
            "a run": await api.http.post("/v1/runs", json={"prompt": "hi"}, headers=alice),
            "a session": await api.http.post("/v1/sessions", json={}, headers=alice),
            "a turn of her session": await api.http.post(
                f"/v1/sessions/{session}/messages", json={"text": "hi"}, headers=alice
            ),
            "a new session's message": await api.http.post(
                f"/v1/sessions/alice-new-{new}/messages", json={"text": "hi"}, headers=alice
            ),
            "an AG-UI run": await api.http.post(
                "/agui", json=agui_input(session, "hi"), headers=alice
            ),
            "an AG-UI run on a new thread": await api.http.post(
                "/agui", json=agui_input(f"alice-thread-{new}", "hi"), headers=alice
            ),
        }
        for path_name, refused in http_refusals.items():
            assert refused.status_code == 429, (path_name, refused.text)
            body = refused.json()
            match = refusal.fullmatch(body["error"])
            assert match, (path_name, body)
            seconds = int(refused.headers["Retry-After"])
            assert 86_000 < seconds <= 86_400 and body["retry_after"] == seconds, body
            assert body["limit"] == "tokens_per_day", path_name

        for path_name, request in {
            "a run": api.http.post("/v1/runs", json={"prompt": "hi"}, headers=bob),
            "a session": api.http.post("/v1/sessions", json={}, headers=bob),
            "a message": api.http.post(
                f"/v1/sessions/bob-session-{new}/messages?wait=true",
                json={"text": "hi"},
                headers=bob,
            ),
            "an AG-UI run": api.http.post(
                "/agui", json=agui_input(f"bob-thread-{new}", "hi"), headers=bob
            ),
        }.items():
            taken = await request
            assert taken.status_code in (200, 201), (path_name, taken.text)

    visible = AgentClient(temporal_env.client)

    async def alices_session_is_listed() -> bool:  # the gateways count from visibility
        listed = [r async for r in visible.listed(f"WorkflowId = '{session}'")]
        assert [r.starter for r in listed] == [names["alice"]], listed
        return True

    await eventually(alices_session_is_listed, what="alice's session in visibility")
    async with (
        http_gateway(agent, temporal_env, "mcp", "--http", environ=environ) as mcp_port,
        http_gateway(agent, temporal_env, "a2a", environ=environ) as a2a_port,
    ):
        calls: dict[str, dict[str, Any]] = {
            "run_agent": {"prompt": "hi", "wait": False},
            "send_message": {"session_id": f"alice-mcp-session-{new}", "text": "hi"},
        }
        async with mcp_as(mcp_port, tokens["alice"]) as mcp:
            for tool, arguments in calls.items():
                result = await mcp.call_tool(tool, arguments)
                assert result.is_error, (tool, tool_text(result))
                said_text = tool_text(result)  # the SDK's words around ours
                assert said_text.startswith(f"Error executing tool {tool}: "), said_text
                assert refusal.fullmatch(said_text.split(": ", 1)[1]), said_text
        async with mcp_as(mcp_port, tokens["bob"]) as mcp:
            ran = await mcp.call_tool("run_agent", {"prompt": "hi", "wait": False})
            assert not ran.is_error, tool_text(ran)
            sent = await mcp.call_tool(
                "send_message", {"session_id": f"bob-mcp-{new}", "text": "hi"}
            )
            assert not sent.is_error, tool_text(sent)

        for streaming in (False, True):
            async with a2a_as(a2a_port, tokens["alice"], streaming=streaming) as a2a:
                events = [e async for e in a2a.send_message(user_message("hi"))]
            state, said_text = final_state(events)
            assert state == TaskState.TASK_STATE_REJECTED, (streaming, events[-1])
            assert refusal.fullmatch(said_text), said_text
            async with a2a_as(a2a_port, tokens["bob"], streaming=streaming) as a2a:
                events = [e async for e in a2a.send_message(user_message("hi"))]
            assert final_state(events)[0] == TaskState.TASK_STATE_COMPLETED, events[-1]

    started_by_alice = [
        r.workflow_id
        async for r in visible.listed(f"TaskQueue = '{agent.task_queue}'")
        if r.starter == names["alice"]
    ]
    assert started_by_alice == [session]  # nothing refused started
    for refused_id in (f"alice-new-{new}", f"alice-thread-{new}", f"alice-mcp-session-{new}"):
        try:
            await visible.run(refused_id).describe()
            raise AssertionError(f"{refused_id} was started")
        except RunNotFound:
            pass
