"""`agent serve`'s HTTP API over real HTTP (uvicorn, httpx) against the real worker and the
fake OpenAI-compatible server: starting runs, status and results, approvals with the `decide`
update's digest rules and their HTTP statuses, steering and cancelling, sessions, the bearer
token, CORS, the body limit, bad input as 422 naming the field, the OpenAPI schema, and the
event stream over SSE (order, resume with `Last-Event-ID`, one subscription per run)."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from typing import Any

import httpx
import pytest
from temporalio.api.enums.v1 import EventType

from durable_agents.cli.main import run_cli
from durable_agents.servers.auth.authenticator import Authenticator, token_matches
from durable_agents.servers.http_api.config import ConfigError, ServeConfig, is_loopback
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.http_api_support import ORIGIN, TOKEN, LiveApi, collect, live_api


@pytest.fixture
async def api(agent: AgentHarness) -> Any:
    async with live_api(agent) as live:
        yield live


def wid(prefix: str = "http") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def write_calls(*ids: str) -> fake.Completion:
    return fake.tool_calls(
        *(fake.call("write_file", {"path": f"{i}.txt", "content": f"text {i}"}, id=i) for i in ids)
    )


async def pending_ids(api: LiveApi, workflow_id: str, count: int) -> list[dict[str, Any]]:
    async def look() -> list[dict[str, Any]]:
        response = await api.http.get(f"/v1/runs/{workflow_id}/pending")
        assert response.status_code == 200, response.text
        body: list[dict[str, Any]] = response.json()
        assert len(body) == count, body
        return body

    return await eventually(look, what=f"{count} pending calls")


# -- runs ----------------------------------------------------------------------------------------


async def test_start_a_run_then_its_status_and_result(api: LiveApi, agent: AgentHarness) -> None:
    agent.fake.enqueue(fake.text("4"), fake.text("again"))
    workflow_id = wid()
    response = await api.http.post(
        "/v1/runs", json={"prompt": "What is 2 + 2?\nShow your work.", "id": workflow_id}
    )
    assert response.status_code == 201, response.text
    assert response.json()["workflow_id"] == workflow_id

    result = await api.http.get(f"/v1/runs/{workflow_id}/result", params={"wait": "true"})
    assert result.status_code == 200
    assert result.json()["answer"] == "4"
    assert result.json()["stop_reason"] == "completed"

    status = (await api.http.get(f"/v1/runs/{workflow_id}")).json()
    assert status["execution_status"] == "COMPLETED"
    assert status["phase"] == "done"
    assert status["static_summary"] == "What is 2 + 2?"  # the prompt's first line
    assert status["started_via"] == "serve"
    description = await agent.client.get_workflow_handle(workflow_id).describe()
    assert await description.static_summary() == "What is 2 + 2?"

    again = await api.http.post("/v1/runs", json={"prompt": "x", "id": workflow_id})
    assert again.status_code == 201  # a closed run's id can be used again

    history = await agent.client.get_workflow_handle(workflow_id).fetch_history()
    assert TOKEN not in history.to_json()


async def test_result_is_202_while_the_run_goes_on(api: LiveApi, agent: AgentHarness) -> None:
    release = threading.Event()
    agent.fake.enqueue(fake.hold(release, fake.text("done")))
    workflow_id = wid()
    assert (
        await api.http.post("/v1/runs", json={"prompt": "p", "id": workflow_id})
    ).status_code == 201
    running = await api.http.post("/v1/runs", json={"prompt": "p", "id": workflow_id})
    assert running.status_code == 409
    assert "already running" in running.json()["error"]
    early = await api.http.get(f"/v1/runs/{workflow_id}/result")
    assert early.status_code == 202
    assert early.json() == {"workflow_id": workflow_id, "execution_status": "RUNNING"}
    release.set()
    done = await api.http.get(f"/v1/runs/{workflow_id}/result?wait=true")
    assert (done.status_code, done.json()["answer"]) == (200, "done")


async def test_decisions_follow_the_decide_rules(api: LiveApi, agent: AgentHarness) -> None:
    agent.fake.enqueue(write_calls("w1", "w2"), fake.text("Written."))
    workflow_id = wid()
    await api.http.post("/v1/runs", json={"prompt": "write two files", "id": workflow_id})
    pending = await pending_ids(api, workflow_id, 2)
    digest = {p["call_id"]: p["args_digest"] for p in pending}

    async def decide(body: dict[str, Any], run: str = workflow_id) -> Any:
        return await api.http.post(f"/v1/runs/{run}/decisions", json=body)

    some = {"decision": "approve", "args_digest": "0" * 12}
    unknown_run = await decide({"call_id": "w1", **some}, run=wid("nope"))
    assert unknown_run.status_code == 404
    unknown_call = await decide({"call_id": "nope", **some})
    assert unknown_call.status_code == 404
    assert "nope" in unknown_call.json()["error"]
    # an approval names the digest of the arguments reviewed (issue 40 item 5)
    no_digest = await decide({"call_id": "w1", "decision": "approve"})
    assert no_digest.status_code == 422, no_digest.text
    assert no_digest.json()["fields"][0]["field"] == "args_digest"
    assert "arguments that were reviewed" in no_digest.json()["error"]
    other_args = await decide({"call_id": "w1", "decision": "approve", "args_digest": "0" * 64})
    assert other_args.status_code == 409
    assert "args_digest" in other_args.json()["error"]
    # a prefix that is not theirs: the error names the HTTP field, not a CLI flag (#31 item 10)
    other_prefix = await decide({"call_id": "w1", **some})
    assert other_prefix.status_code == 409, other_prefix.text
    assert "shown with args_digest 000000000000" in other_prefix.json()["error"]
    assert "--" not in other_prefix.json()["error"]
    reply_to_approval = await decide({"call_id": "w1", "decision": "reply", "text": "yes"})
    assert reply_to_approval.status_code == 422

    approved = await decide(
        {"call_id": "w1", "decision": "approve", "args_digest": digest["w1"], "by": "ann"}
    )
    assert approved.status_code == 200, approved.text
    assert (approved.json()["outcome"], approved.json()["by"]) == ("approved", "ann")
    twice = await decide({"call_id": "w1", "decision": "approve", "args_digest": digest["w1"]})
    assert twice.status_code == 409, twice.text
    assert "already been decided" in twice.json()["error"]

    edited = await decide(
        {
            "call_id": "w2",
            "decision": "approve",
            "args": {"path": "w2-edited.txt", "content": "edited"},
            "args_digest": digest["w2"][:12],  # a prefix, as `agent pending` shows it
        }
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["outcome"] == "edited"
    result = (await api.http.get(f"/v1/runs/{workflow_id}/result?wait=true")).json()
    assert result["answer"] == "Written."
    assert (agent.workspace / "w2-edited.txt").read_text() == "edited"
    again = await decide({"call_id": "w1", "decision": "reject"})  # decided before the end
    assert again.status_code == 409
    assert again.json()["error"] == "call 'w1' has already been decided"
    ended = await decide({"call_id": "w9", "decision": "reject"})
    assert ended.status_code == 409
    assert "already ended" in ended.json()["error"]


async def test_a_question_is_answered_with_a_reply(api: LiveApi, agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("ask_user", {"question": "Which colour?"}, id="q1")),
        fake.text("Blue it is."),
    )
    workflow_id = wid()
    await api.http.post("/v1/runs", json={"prompt": "pick a colour", "id": workflow_id})
    [question] = await pending_ids(api, workflow_id, 1)
    assert question["kind"] == "question"
    approve = await api.http.post(
        f"/v1/runs/{workflow_id}/decisions",
        json={"call_id": "q1", "decision": "approve", "args_digest": question["args_digest"]},
    )
    assert approve.status_code == 422, approve.text
    no_text = await api.http.post(
        f"/v1/runs/{workflow_id}/decisions", json={"call_id": "q1", "decision": "reply"}
    )
    assert no_text.status_code == 422
    reply = await api.http.post(
        f"/v1/runs/{workflow_id}/decisions",
        json={"call_id": "q1", "decision": "reply", "text": "blue"},
    )
    assert reply.status_code == 200, reply.text
    result = (await api.http.get(f"/v1/runs/{workflow_id}/result?wait=true")).json()
    assert result["answer"] == "Blue it is."
    assert result["steps"][0]["observation"] == "blue"


async def test_steer_then_cancel(api: LiveApi, agent: AgentHarness) -> None:
    agent.fake.enqueue(write_calls("w1"))
    workflow_id = wid()
    await api.http.post("/v1/runs", json={"prompt": "write a file", "id": workflow_id})
    await pending_ids(api, workflow_id, 1)
    empty = await api.http.post(f"/v1/runs/{workflow_id}/steer", json={"text": ""})
    assert empty.status_code == 422
    assert empty.json()["fields"][0]["field"] == "text"
    steered = await api.http.post(
        f"/v1/runs/{workflow_id}/steer", json={"text": "Use British spelling.", "by": "ann"}
    )
    assert steered.status_code == 200, steered.text
    assert steered.json() == {"workflow_id": workflow_id, "queued": 1}
    cancelled = await api.http.post(f"/v1/runs/{workflow_id}/cancel", json={})
    assert cancelled.status_code == 202
    result = (await api.http.get(f"/v1/runs/{workflow_id}/result?wait=true")).json()
    assert result["status"] == "cancelled"
    again = await api.http.post(f"/v1/runs/{workflow_id}/cancel", json={})
    assert again.status_code == 409
    assert (await api.http.get(f"/v1/runs/{workflow_id}/pending")).json() == []
    assert (await api.http.get(f"/v1/runs/{wid('nope')}")).status_code == 404


# -- sessions ------------------------------------------------------------------------------------


async def test_sessions_start_take_messages_and_answer(api: LiveApi, agent: AgentHarness) -> None:
    agent.fake.enqueue(fake.text("Hello Ann."), fake.text("You are Ann."))
    session = wid("session")
    started = await api.http.post("/v1/sessions", json={"id": session, "memory_max_turns": 5})
    assert started.status_code == 201, started.text
    assert started.json()["workflow_id"] == session
    taken = await api.http.post(f"/v1/sessions/{session}/messages", json={"text": "I am Ann."})
    assert taken.status_code == 202
    assert taken.json()["session_id"] == session
    second = await api.http.post(
        f"/v1/sessions/{session}/messages", params={"wait": "true"}, json={"text": "Who am I?"}
    )
    assert second.status_code == 200, second.text
    assert (second.json()["turn"], second.json()["answer"]) == (2, "You are Ann.")
    status = (await api.http.get(f"/v1/sessions/{session}")).json()
    assert (status["state"], status["turns"]) == ("idle", 2)
    dup = await api.http.post("/v1/sessions", json={"id": session})
    assert dup.status_code == 409
    new = wid("session")  # a message to a session that does not exist yet starts it
    agent.fake.enqueue(fake.text("Started."))
    first = await api.http.post(f"/v1/sessions/{new}/messages?wait=true", json={"text": "hi"})
    assert (first.status_code, first.json()["answer"]) == (200, "Started.")


# -- security and bad input ----------------------------------------------------------------------


async def test_the_token_is_required_and_compared(api: LiveApi) -> None:
    async with httpx.AsyncClient(base_url=api.url) as anonymous:
        missing = await anonymous.get("/v1/runs/x")
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        assert "missing bearer token" in missing.json()["error"]
        wrong = await anonymous.get("/v1/runs/x", headers={"Authorization": "Bearer nope"})
        assert (wrong.status_code, "wrong" in wrong.json()["error"]) == (401, True)
        assert (await anonymous.get("/openapi.json")).status_code == 401
        assert (await anonymous.post("/agui", json={})).status_code == 401
        console = await anonymous.get("/")
        assert (console.status_code, console.headers["content-type"]) == (
            200,
            "text/html; charset=utf-8",
        )
    assert token_matches(TOKEN, TOKEN)
    assert not token_matches(None, TOKEN)
    assert not token_matches(TOKEN[:-1], TOKEN)
    assert not token_matches("é" + TOKEN, TOKEN)


async def test_bad_input_is_422_naming_the_field(api: LiveApi) -> None:
    cases = [
        ("/v1/runs", {"prompt": "x", "max_iterations": "ten"}, "max_iterations"),
        ("/v1/runs", {"max_iterations": 3}, "prompt"),
        ("/v1/runs", {"prompt": "x", "no_such_field": 1}, "no_such_field"),
        ("/v1/runs", {"prompt": "x", "id": "has space"}, "id"),
        ("/v1/runs/r/decisions", {"call_id": "c", "decision": "maybe"}, "decision"),
        ("/v1/runs/r/decisions", {"decision": "approve"}, "call_id"),
        ("/v1/sessions", {"memory_max_turns": -1}, "memory_max_turns"),
    ]
    for path, body, field in cases:
        response = await api.http.post(path, json=body)
        assert response.status_code == 422, (path, body, response.text)
        fields = [problem["field"] for problem in response.json()["fields"]]
        assert field in fields, (body, fields)
        assert field in response.json()["error"]
    broken = await api.http.post(
        "/v1/runs", content=b'{"prompt": ', headers={"Content-Type": "application/json"}
    )
    assert broken.status_code == 422
    assert broken.json()["fields"][0]["field"] == "body"
    assert "Traceback" not in broken.text
    bad_resume = await api.http.get("/v1/runs/r/events", headers={"Last-Event-ID": "abc"})
    assert bad_resume.status_code == 422
    assert "Last-Event-ID" in bad_resume.json()["error"]
    bad_after = await api.http.get("/v1/runs/r/events", params={"after": "x"})
    assert (bad_after.status_code, bad_after.json()["fields"][0]["field"]) == (422, "query.after")


async def test_bodies_over_the_limit_are_refused(api: LiveApi) -> None:
    big = {"prompt": "x" * (300 * 1024)}
    response = await api.http.post("/v1/runs", json=big)
    assert response.status_code == 413
    assert "limit" in response.json()["error"]

    async def chunks() -> Any:  # no Content-Length: the limit applies as the body streams in
        for _ in range(40):
            yield b"x" * 10_000

    streamed = await api.http.post(
        "/v1/runs", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert streamed.status_code == 413


async def test_cors_allows_the_configured_origins_only(api: LiveApi) -> None:
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    allowed = await api.http.options("/v1/runs", headers={"Origin": ORIGIN, **preflight})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    other = await api.http.options(
        "/v1/runs", headers={"Origin": "http://evil.example", **preflight}
    )
    assert "access-control-allow-origin" not in other.headers


async def test_openapi_lists_the_routes(api: LiveApi) -> None:
    schema = (await api.http.get("/openapi.json")).json()
    paths = set(schema["paths"])
    for path in [
        "/v1/runs",
        "/v1/runs/{workflow_id}",
        "/v1/runs/{workflow_id}/result",
        "/v1/runs/{workflow_id}/pending",
        "/v1/runs/{workflow_id}/decisions",
        "/v1/runs/{workflow_id}/tool_results",
        "/v1/runs/{workflow_id}/steer",
        "/v1/runs/{workflow_id}/cancel",
        "/v1/runs/{workflow_id}/events",
        "/v1/sessions",
        "/v1/sessions/{session_id}/messages",
        "/v1/sessions/{session_id}/events",
        "/agui",
    ]:
        assert path in paths, sorted(paths)
    assert "prompt" in json.dumps(schema["components"]["schemas"]["StartRun"])
    assert "client_tools" in json.dumps(schema["components"]["schemas"]["StartRun"])
    assert "call_id" in json.dumps(schema["components"]["schemas"]["ToolResultUpdate"])


def test_no_token_means_loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    refusal = Authenticator().listen_refusal("0.0.0.0")
    assert refusal is not None and "AGENT_PRINCIPALS_FILE" in refusal
    assert Authenticator(api_token=TOKEN).listen_refusal("0.0.0.0") is None
    assert Authenticator().listen_refusal("127.0.0.1") is None
    with pytest.raises(ConfigError, match=r"'\*' would let every web page"):
        ServeConfig.from_env({"AGENT_API_CORS_ORIGINS": "*"})
    monkeypatch.delenv("AGENT_API_TOKEN", raising=False)
    assert run_cli(["serve", "--host", "0.0.0.0", "--port", "1"]) == 4  # before connecting


async def test_a_finished_workflow_without_events_ends_the_stream(
    api: LiveApi, agent: AgentHarness
) -> None:
    agent.fake.enqueue(fake.text("ok"))
    workflow_id = wid()
    await api.http.post("/v1/runs", json={"prompt": "p", "id": workflow_id})
    await api.http.get(f"/v1/runs/{workflow_id}/result?wait=true")
    missing = await api.http.get(f"/v1/runs/{wid('nope')}/events")
    assert missing.status_code == 404
    events = await asyncio.wait_for(collect(api.http, f"/v1/runs/{workflow_id}/events"), 60)
    assert events, "a finished run's stream is read with the query and ends"


def poll_offsets(history: Any) -> list[int]:
    """`from_offset` of every stream poll update accepted in a history."""
    found = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            attrs = event.workflow_execution_update_accepted_event_attributes
            if attrs.accepted_request.input.name == "__temporal_workflow_stream_poll":
                payload = attrs.accepted_request.input.args.payloads[0]
                found.append(json.loads(payload.data)["from_offset"])
    return found


# -- events over SSE -----------------------------------------------------------------------------


async def test_events_stream_in_order_and_resume_without_gaps_or_repeats(
    api: LiveApi, agent: AgentHarness
) -> None:
    agent.fake.enqueue(
        fake.streamed(write_calls("w1"), piece_chars=5),
        fake.streamed("All written down.", piece_seconds=0.05, piece_chars=4),
    )
    workflow_id = wid()
    await api.http.post("/v1/runs", json={"prompt": "write a file", "id": workflow_id})
    path = f"/v1/runs/{workflow_id}/events"
    live = asyncio.create_task(collect(api.http, path))
    [call] = await pending_ids(api, workflow_id, 1)
    # A client that read the first events while the run waits, then went away.
    early = await collect(api.http, path, limit=2)
    assert [e.event for e in early] == ["run_started", early[1].event]
    await api.http.post(
        f"/v1/runs/{workflow_id}/decisions",
        json={"call_id": "w1", "decision": "approve", "args_digest": call["args_digest"]},
    )
    events = await live
    types = [e.event for e in events]
    assert types[-1] == "run_finished"  # and the stream ended there
    offsets = [int(e.id or -1) for e in events]
    assert offsets == sorted(set(offsets)) and offsets[0] == 0
    assert all(e.data["offset"] == int(e.id or -1) for e in events)
    assert all(e.data["type"] == e.event for e in events)
    assert types.index("approval_requested") < types.index("approval_decided")
    assert types.index("approval_decided") < types.index("tool_call_started")
    assert types.index("tool_call_started") < types.index("tool_call_finished")
    # the answer's text: its deltas, then what no delta carried (`rest` of the call's end)
    answer_end = [e.data for e in events if e.event == "model_call_finished"][-1]
    streamed = "".join(e.data["text"] for e in events if e.event == "text_delta")
    assert streamed + (answer_end.get("rest") or "") == "All written down."
    # It reconnects with the last id it saw: the rest, nothing twice, nothing missed.
    resumed = await collect(api.http, path, headers={"Last-Event-ID": early[-1].id or ""})
    assert [e.id for e in early + resumed] == [e.id for e in events]
    after = await collect(api.http, f"{path}?after={offsets[3]}")
    assert [e.id for e in after] == [e.id for e in events[4:]]


async def test_one_subscription_serves_every_client(api: LiveApi, agent: AgentHarness) -> None:
    agent.fake.enqueue(write_calls("w1"), fake.text("Done."))
    workflow_id = wid()
    await api.http.post("/v1/runs", json={"prompt": "write a file", "id": workflow_id})
    path = f"/v1/runs/{workflow_id}/events"
    readers = [asyncio.create_task(collect(api.http, path)) for _ in range(3)]
    [call] = await pending_ids(api, workflow_id, 1)
    feeds = api.app.state.feeds
    await eventually(lambda: (feed := feeds.active(workflow_id)) and feed.readers == 3)
    await api.http.post(
        f"/v1/runs/{workflow_id}/decisions",
        json={"call_id": "w1", "decision": "approve", "args_digest": call["args_digest"]},
    )
    first, *others = [await reader for reader in readers]
    assert first[-1].event == "run_finished"
    for other in others:
        assert [(e.id, e.event) for e in other] == [(e.id, e.event) for e in first]
    history = await agent.client.get_workflow_handle(workflow_id).fetch_history()
    assert poll_offsets(history) == [], "the feed reads by query: no poll update is recorded"
