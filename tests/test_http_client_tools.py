"""Client-side tools through `agent serve`: `POST /v1/runs/{id}/tool_results` answers a call with
its result or an error (the `tool_result` update; 404 for an unknown run or call, 409 for one
already answered, 422 for a result that breaks the tool's `result_schema`, naming the problem,
refused by the update's validator before anything enters history), for runs and for sessions
(an inline turn's call at the session, a child turn's at the child run, as decisions go). Over
real HTTP against the real worker, the real `openai` client and the fake model server."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from temporalio.api.enums.v1 import EventType

from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.http_api_support import LiveApi, live_api
from tests.test_client_tools import LOCATION


@pytest.fixture
async def api(agent: AgentHarness) -> Any:
    async with live_api(agent) as live:
        yield live


def wid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def locate(call_id: str) -> fake.Completion:
    return fake.tool_calls(fake.call("get_location", {"accuracy": "city"}, id=call_id))


async def waiting_call(api: LiveApi, workflow_id: str) -> dict[str, Any]:
    async def look() -> dict[str, Any]:
        response = await api.http.get(f"/v1/runs/{workflow_id}/pending")
        assert response.status_code == 200, response.text
        pending = response.json()
        assert len(pending) == 1, pending
        return dict(pending[0])

    return await eventually(look, what=f"a client tool call to wait in {workflow_id}")


async def answer(api: LiveApi, workflow_id: str, body: Any) -> httpx.Response:
    return await api.http.post(f"/v1/runs/{workflow_id}/tool_results", json=body)


@contextlib.asynccontextmanager
async def message_waiting(
    api: LiveApi, session: str, text: str
) -> AsyncIterator[asyncio.Task[Any]]:
    """`POST /v1/sessions/{id}/messages?wait=true` under way (cancelled if the test fails)."""
    turn = asyncio.create_task(
        api.http.post(
            f"/v1/sessions/{session}/messages", params={"wait": "true"}, json={"text": text}
        )
    )
    try:
        yield turn
    finally:
        turn.cancel()
        with contextlib.suppress(BaseException):
            await turn


async def accepted_updates(agent: AgentHarness, workflow_id: str) -> int:
    history = await agent.client.get_workflow_handle(workflow_id).fetch_history()
    return sum(
        e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
        for e in history.events
    )


async def test_a_run_declares_a_client_tool_and_http_answers_it(
    api: LiveApi, agent: AgentHarness
) -> None:
    agent.fake.enqueue(
        locate("c1"),
        fake.tool_calls(fake.call("get_location", {"accuracy": "exact"}, id="c2")),
        fake.text("You are in Lyon."),
    )
    run = wid("where")
    started = await api.http.post(
        "/v1/runs", json={"id": run, "prompt": "Where am I?", "client_tools": [LOCATION]}
    )
    assert started.status_code == 201, started.text
    request = await waiting_call(api, run)
    assert (request["kind"], request["call_id"], request["tool"]) == (
        "client_tool",
        "c1",
        "get_location",
    )
    assert request["args"] == {"accuracy": "city"}
    offered = [t["function"]["name"] for t in agent.fake.requests[0].body["tools"]]
    assert "get_location" in offered

    breaks = await answer(api, run, {"call_id": "c1", "result": {"lat": 45.7}})
    assert breaks.status_code == 422, breaks.text
    assert breaks.json()["error"] == (
        "the result for get_location (c1) does not match its result_schema: "
        "(root): 'city' is a required property"
    )
    assert breaks.json()["call_id"] == "c1"
    unknown_call = await answer(api, run, {"call_id": "nope", "result": {"city": "Lyon"}})
    assert unknown_call.status_code == 404, unknown_call.text
    assert "no pending call 'nope'" in unknown_call.json()["error"]
    unknown_run = await answer(api, wid("nope"), {"call_id": "c1", "result": {"city": "x"}})
    assert unknown_run.status_code == 404
    neither = await answer(api, run, {"call_id": "c1"})
    assert neither.status_code == 422
    assert 'give exactly one of "result" and "error"' in neither.json()["error"]
    extra = await answer(api, run, {"call_id": "c1", "result": 1, "decision": "approve"})
    assert extra.status_code == 422
    assert extra.json()["fields"][0]["field"] == "decision"
    assert await accepted_updates(agent, run) == 0  # refused before anything entered history

    sent = await answer(api, run, {"call_id": "c1", "result": {"city": "Lyon"}, "by": "web"})
    assert sent.status_code == 200, sent.text
    recorded = sent.json()
    assert (recorded["kind"], recorded["outcome"], recorded["by"]) == (
        "client_tool",
        "answered",
        "web",
    )
    assert recorded["reply"] == '{"city": "Lyon"}'
    again = await answer(api, run, {"call_id": "c1", "result": {"city": "Paris"}})
    assert again.status_code == 409, again.text
    assert again.json()["error"] == "call 'c1' has already been answered"

    second = await waiting_call(api, run)
    assert second["call_id"] == "c2"
    failed = await answer(api, run, {"call_id": "c2", "error": "the user said no"})
    assert failed.status_code == 200, failed.text
    assert failed.json()["reason"] == "the user said no"

    result = (await api.http.get(f"/v1/runs/{run}/result", params={"wait": "true"})).json()
    assert result["answer"] == "You are in Lyon."
    first, refused = result["steps"]
    assert (first["status"], first["observation"]) == ("ok", '{"city": "Lyon"}')
    assert refused["status"] == "error"
    assert refused["observation"] == (
        "Error: the client could not run get_location: the user said no"
    )
    ended = await answer(api, run, {"call_id": "c2", "result": {"city": "x"}})
    assert ended.status_code == 409
    assert "has already ended" in ended.json()["error"]


async def test_bad_client_tools_in_a_run_body_are_422_naming_the_field(api: LiveApi) -> None:
    bad = {**LOCATION, "parameters": {"type": "string"}}
    response = await api.http.post("/v1/runs", json={"prompt": "x", "client_tools": [bad]})
    assert response.status_code == 422
    [problem] = response.json()["fields"]
    assert problem["field"] == "client_tools.0"
    assert "parameters of get_location: an object schema" in problem["message"]


async def test_a_session_s_inline_turn_is_answered_at_the_session(
    api: LiveApi, agent: AgentHarness
) -> None:
    agent.fake.enqueue(locate("c1"), fake.text("Lyon it is."))
    session = wid("client-session")
    started = await api.http.post(
        "/v1/sessions", json={"id": session, "agent": {"client_tools": [LOCATION]}}
    )
    assert started.status_code == 201, started.text
    async with message_waiting(api, session, "Where?") as turn:
        request = await waiting_call(api, session)
        assert f"--workflow-id {session} " in request["command"]
        breaks = await answer(api, session, {"call_id": "c1", "result": 3})
        assert breaks.status_code == 422
        assert "does not match its result_schema" in breaks.json()["error"]
        sent = await answer(api, session, {"call_id": "c1", "result": {"city": "Lyon"}})
        assert sent.status_code == 200, sent.text
        answered = await turn
    assert answered.status_code == 200, answered.text
    assert answered.json()["answer"] == "Lyon it is."
    assert answered.json()["steps"][0]["observation"] == '{"city": "Lyon"}'


async def test_a_child_turn_is_answered_at_the_session_or_the_child_run(
    api: LiveApi, agent: AgentHarness
) -> None:
    """The session hands a client tool's result to its child turn (`forward_to_turn`) and
    answers what the turn answered (the pending request's command names the child run, whose
    own id takes it too)."""
    agent.fake.enqueue(locate("c1"), fake.text("Lyon, from the child turn."))
    session = wid("client-child")
    started = await api.http.post(
        "/v1/sessions",
        json={"id": session, "turns": "child", "agent": {"client_tools": [LOCATION]}},
    )
    assert started.status_code == 201, started.text
    async with message_waiting(api, session, "Where?") as turn:
        request = await waiting_call(api, session)
        child = f"{session}/turn-1"
        assert f"--workflow-id {child} " in request["command"]
        breaks = await answer(api, session, {"call_id": "c1", "result": 3})
        assert breaks.status_code == 422  # the turn's refusal, through the session
        assert "does not match its result_schema" in breaks.json()["error"]
        at_session = await answer(api, session, {"call_id": "c1", "result": {"city": "Lyon"}})
        assert at_session.status_code == 200, at_session.text
        assert at_session.json()["outcome"] == "answered"
        answered = await turn
    assert answered.json()["answer"] == "Lyon, from the child turn."
