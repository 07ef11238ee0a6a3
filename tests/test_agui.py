"""AG-UI at `POST /agui`: the protocol's own validator (`ag-ui-validate`, its CLI against the
live endpoint) finds nothing wrong; a thread is a durable session (started by its first
message, remembered by the next); an approval shows as state and custom events, is answered
through the HTTP API, and the stream goes on to the tool's result and the answer; the input's
frontend tools are the session's client tools: a call of one ends the AG-UI run naming it in
`pendingToolCallIds`, and the next input's `ToolMessage` answers it (`tool_result`)."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import assert_valid_agui

from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness
from tests.http_api_support import TOKEN, LiveApi, live_api
from tests.test_client_tools import LOCATION

VALIDATOR = Path(sys.prefix) / "bin" / "ag-ui-validate"


@pytest.fixture
async def api(agent: AgentHarness) -> Any:
    async with live_api(agent) as live:
        yield live


def run_input(thread: str, *texts: str) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": f"run_{uuid.uuid4().hex[:8]}",
        "state": {},
        "messages": [
            {"id": f"msg_{i}", "role": "user", "content": text} for i, text in enumerate(texts)
        ],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


async def agui_events(api: LiveApi, body: dict[str, Any]) -> list[dict[str, Any]]:
    events = []
    async with api.http.stream(
        "POST", "/agui", json=body, headers={"Accept": "text/event-stream"}
    ) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: ") :]))
    return events


async def waiting_calls(api: LiveApi, thread: str) -> list[dict[str, Any]]:
    """The calls that wait in the thread's session, once one does."""

    async def waiting() -> list[dict[str, Any]]:
        response = await api.http.get(f"/v1/runs/{thread}/pending")
        pending: list[dict[str, Any]] = response.json()
        assert response.status_code == 200 and pending, pending
        return pending

    return await eventually(waiting, what="the approval to wait")


async def test_the_validator_passes_against_the_live_endpoint(
    api: LiveApi, agent: AgentHarness
) -> None:
    agent.fake.set_handler(lambda body: fake.streamed("Hello! I am here.", piece_chars=3))
    process = await asyncio.create_subprocess_exec(
        str(VALIDATOR),
        f"{api.url}/agui",
        "--header",
        f"Authorization: Bearer {TOKEN}",
        "--no-color",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    report = output.decode()
    assert process.returncode == 0, report
    assert "no conformance violations" in report, report


async def test_a_thread_is_a_session_that_remembers(api: LiveApi, agent: AgentHarness) -> None:
    agent.fake.set_handler(
        lambda body: fake.streamed(f"answer to: {body['messages'][-1]['content']}", piece_chars=4)
    )
    thread = f"thread-{uuid.uuid4().hex[:8]}"
    first = await agui_events(api, run_input(thread, "I am Ann."))
    assert_valid_agui(first)
    types = [e["type"] for e in first]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert "TEXT_MESSAGE_START" in types and "TEXT_MESSAGE_END" in types
    text = "".join(e["delta"] for e in first if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "answer to: I am Ann."
    assert first[-1]["result"]["answer"] == "answer to: I am Ann."
    # The client sends the whole conversation again; only its last user message is new.
    second = await agui_events(api, run_input(thread, "I am Ann.", "Who am I?"))
    assert_valid_agui(second)
    assert second[-1]["result"]["answer"] == "answer to: Who am I?"
    sent = [(m["role"], m["content"]) for m in agent.fake.last_request.body["messages"][1:]]
    assert sent[-3:] == [
        ("user", "I am Ann."),
        ("assistant", "answer to: I am Ann."),
        ("user", "Who am I?"),
    ]
    status = (await api.http.get(f"/v1/sessions/{thread}")).json()
    assert status["turns"] == 2


async def test_an_approval_is_state_and_custom_events(api: LiveApi, agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.streamed(
            fake.tool_calls(
                fake.call("write_file", {"path": "a.txt", "content": "hi"}, id="w1"),
                content="Writing it.",
            )
        ),
        fake.streamed("The file is written.", piece_chars=5),
    )
    thread = f"thread-{uuid.uuid4().hex[:8]}"
    stream = asyncio.create_task(agui_events(api, run_input(thread, "write hi to a.txt")))
    [call] = await waiting_calls(api, thread)
    decided = await api.http.post(
        f"/v1/runs/{thread}/decisions",
        json={"call_id": "w1", "decision": "approve", "args_digest": call["args_digest"]},
    )
    assert decided.status_code == 200, decided.text
    events = await stream
    assert_valid_agui(events, features=["agentic-chat", "shared-state", "human-in-the-loop"])
    types = [e["type"] for e in events]
    names = [e.get("name") for e in events]
    requested = names.index("durable_agents.approval_requested")
    snapshot = next(e for e in events[:requested] + events if e["type"] == "STATE_SNAPSHOT")
    assert snapshot["snapshot"]["pending"][0]["call_id"] == "w1"
    assert snapshot["snapshot"]["pending"][0]["digest"] == call["args_digest"]
    assert requested < names.index("durable_agents.approval_decided")
    start = types.index("TOOL_CALL_START")
    assert names.index("durable_agents.approval_decided") < start
    assert events[start]["toolCallName"] == "write_file"
    args = next(e for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args["delta"])["path"] == "a.txt"
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == "w1"
    assert types[-1] == "RUN_FINISHED"
    assert events[-1]["result"]["answer"] == "The file is written."
    assert (agent.workspace / "a.txt").read_text() == "hi"


async def test_bad_input_is_refused_before_anything_runs(api: LiveApi) -> None:
    missing = await api.http.post("/agui", json={"threadId": "t"})
    assert missing.status_code == 422
    fields = [p["field"] for p in missing.json()["fields"]]
    assert "runId" in fields or "run_id" in fields, fields
    no_user = await api.http.post(
        "/agui",
        json={
            **run_input("t", "x"),
            "messages": [{"id": "a", "role": "assistant", "content": "x"}],
        },
    )
    assert no_user.status_code == 422
    assert no_user.json()["fields"][0]["field"] == "messages"


LOCATION_TOOL = {k: v for k, v in LOCATION.items() if k != "result_schema"}
"""`get_location` as an AG-UI frontend tool declares it (AG-UI's `Tool` has no result schema)."""


def tool_turn(thread: str, call_id: str, content: str, **extra: Any) -> dict[str, Any]:
    """The input after the frontend ran the tool: the conversation with its tool message."""
    body = run_input(thread, "Where am I?")
    body["tools"] = [LOCATION_TOOL]
    body["messages"] += [
        {
            "id": f"{call_id}:call",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_location", "arguments": '{"accuracy": "city"}'},
                }
            ],
        },
        {"id": f"{call_id}:tool", "role": "tool", "toolCallId": call_id, "content": content},
    ]
    body["messages"][-1].update(extra)
    return body


async def test_frontend_tools_end_the_run_and_the_tool_message_answers_it(
    api: LiveApi, agent: AgentHarness
) -> None:
    agent.fake.enqueue(
        fake.streamed(
            fake.tool_calls(
                fake.call("get_location", {"accuracy": "city"}, id="c1"),
                content="Let me look.",
            )
        ),
        fake.streamed("You are in Lyon.", piece_chars=4),
    )
    thread = f"thread-{uuid.uuid4().hex[:8]}"
    first_input = run_input(thread, "Where am I?")
    first_input["tools"] = [LOCATION_TOOL]
    first = await agui_events(api, first_input)
    assert_valid_agui(first)
    offered = agent.fake.requests[0].body["tools"]
    [declared] = [t["function"] for t in offered if t["function"]["name"] == "get_location"]
    assert declared["parameters"] == LOCATION_TOOL["parameters"]
    start = next(e for e in first if e["type"] == "TOOL_CALL_START")
    assert (start["toolCallId"], start["toolCallName"]) == ("c1", "get_location")
    args = next(e for e in first if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args["delta"]) == {"accuracy": "city"}
    assert "TOOL_CALL_RESULT" not in [e["type"] for e in first]
    finished = first[-1]
    assert finished["type"] == "RUN_FINISHED"
    assert finished["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}
    assert finished["result"]["waiting_for"] == ["c1"]
    [waiting] = (await api.http.get(f"/v1/runs/{thread}/pending")).json()
    assert (waiting["kind"], waiting["call_id"]) == ("client_tool", "c1")

    # The turn waits durably meanwhile; the frontend's answer comes with the next input.
    unknown = await api.http.post("/agui", json=tool_turn(thread, "nope", '{"city": "Lyon"}'))
    assert unknown.status_code == 404, unknown.text
    assert "no pending call 'nope'" in unknown.json()["error"]

    answer = await agui_events(api, tool_turn(thread, "c1", '{"city": "Lyon"}'))
    assert_valid_agui(answer)
    types = [e["type"] for e in answer]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert "TOOL_CALL_START" not in types and "TOOL_CALL_RESULT" not in types
    text = "".join(e["delta"] for e in answer if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "You are in Lyon."
    assert answer[-1]["result"]["answer"] == "You are in Lyon."
    assert "outcome" not in answer[-1]
    sent = agent.fake.requests[1].body["messages"][-1]
    assert (sent["role"], sent["tool_call_id"], sent["content"]) == (
        "tool",
        "c1",
        '{"city": "Lyon"}',
    )

    again = await api.http.post("/agui", json=tool_turn(thread, "c1", '{"city": "Paris"}'))
    assert again.status_code == 409, again.text


async def test_a_frontend_result_that_breaks_the_schema_is_refused_and_an_error_is_observed(
    api: LiveApi, agent: AgentHarness
) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("get_location", {"accuracy": "city"}, id="c1")),
        fake.text("I could not find you."),
    )
    thread = f"client-{uuid.uuid4().hex[:8]}"
    created = await api.http.post(
        "/v1/sessions",
        json={
            "id": thread,
            "agent": {"client_tools": [LOCATION]},
        },
    )
    assert created.status_code == 201, created.text
    first_input = run_input(thread, "Where am I?")
    first_input["tools"] = [LOCATION_TOOL]
    first = await agui_events(api, first_input)
    assert first[-1]["outcome"]["pendingToolCallIds"] == ["c1"]

    breaks = await api.http.post("/agui", json=tool_turn(thread, "c1", '{"lat": 45.7}'))
    assert breaks.status_code == 422, breaks.text
    assert breaks.json()["error"] == (
        "the result for get_location (c1) does not match its result_schema: "
        "(root): 'city' is a required property"
    )
    failed = await agui_events(api, tool_turn(thread, "c1", "", error="permission denied"))
    assert_valid_agui(failed)
    assert failed[-1]["result"]["answer"] == "I could not find you."
    observed = agent.fake.requests[1].body["messages"][-1]["content"]
    assert observed == "Error: the client could not run get_location: permission denied"


async def test_bad_frontend_tools_are_422_naming_the_field(api: LiveApi) -> None:
    body = run_input("t", "x")
    body["tools"] = [
        LOCATION_TOOL,
        {"name": "bad name", "description": "d"},
        {"name": "pick", "description": "d", "parameters": {"type": "string"}},
    ]
    response = await api.http.post("/agui", json=body)
    assert response.status_code == 422, response.text
    problems = [(p["field"], p["message"]) for p in response.json()["fields"]]
    assert problems == [
        ("tools.1.name", "String should match pattern '^[A-Za-z_][A-Za-z0-9_-]{0,63}$'"),
        ("tools.2", 'Value error, parameters of pick: an object schema ({"type": "object", ...})'),
    ]


async def test_a_child_turn_s_frontend_tool_is_answered_at_the_child_run(
    api: LiveApi, agent: AgentHarness
) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("get_location", {"accuracy": "city"}, id="c1")),
        fake.streamed("Lyon, said the child turn.", piece_chars=5),
    )
    thread = f"child-{uuid.uuid4().hex[:8]}"
    created = await api.http.post(
        "/v1/sessions",
        json={"id": thread, "turns": "child", "agent": {"client_tools": [LOCATION_TOOL]}},
    )
    assert created.status_code == 201, created.text
    first_input = run_input(thread, "Where am I?")
    first_input["tools"] = [LOCATION_TOOL]
    first = await agui_events(api, first_input)
    assert_valid_agui(first)
    assert first[-1]["outcome"]["pendingToolCallIds"] == ["c1"]
    assert first[-1]["result"]["workflow_id"] == f"{thread}/turn-1"

    answer = await agui_events(api, tool_turn(thread, "c1", '"Lyon"'))
    assert_valid_agui(answer)
    assert answer[-1]["result"]["answer"] == "Lyon, said the child turn."
    assert [e for e in answer if e["type"].startswith("TOOL_CALL")] == []
    child = (await api.http.get(f"/v1/runs/{thread}/turn-1/result?wait=true")).json()
    assert child["steps"][0]["observation"] == "Lyon"
