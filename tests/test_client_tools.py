"""Client-side tools (`client_tools`): the model calls one, the run waits durably for the
client's `tool_result` update (validated before anything enters history), and the result is the
observation. Against the real Temporal dev server and the real worker (the scripted model for
the loop's logic; the real `openai` client and the `agent` CLI as a subprocess for the CLI)."""

from __future__ import annotations

import json
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateStage,
)
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import HumanDecision, PendingRequest
from durable_agents.contracts.client_tools import ClientToolSpec, ToolResultUpdate
from durable_agents.contracts.errors import HUMAN_WAIT_TIMED_OUT
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.loop import approvals, client_tools
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.conftest import FAKE_MODEL, AgentHarness, ScriptedHarness, started_workers
from tests.hitl_support import wait_for_pending
from tests.test_cli_run import AgentCli, read_until

LOCATION = {
    "name": "get_location",
    "description": "The user's location, from their browser.",
    "parameters": {
        "type": "object",
        "properties": {"accuracy": {"type": "string", "enum": ["city", "exact"]}},
        "required": ["accuracy"],
    },
    "result_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "lat": {"type": "number"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}
PICKER = {
    "name": "pick_file",
    "description": "Let the user pick a file.",
    "parameters": {"type": "object", "properties": {}},
}


def locate(call_id: str = "c1") -> sm.Reply:
    return sm.tool_calls(sm.call("get_location", {"accuracy": "city"}, id=call_id))


async def tool_result(handle: WorkflowHandle[Any, Any], payload: Any) -> HumanDecision:
    decision = await handle.execute_update("tool_result", payload, result_type=HumanDecision)
    assert isinstance(decision, HumanDecision)
    return decision


async def refusal(handle: WorkflowHandle[Any, Any], payload: Any) -> str:
    with pytest.raises(WorkflowUpdateFailedError) as caught:
        await handle.execute_update("tool_result", payload)
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "ClientToolRefused"
    return cause.message


async def update_events(handle: WorkflowHandle[Any, Any]) -> int:
    history = await handle.fetch_history()
    return sum(
        e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
        for e in history.events
    )


async def test_round_trip_the_result_is_the_observation(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(locate(), sm.text("You are in Lyon."))
    handle = await scripted_agent.start(
        {"prompt": "Where am I?", "tools": ["calculator"], "client_tools": [LOCATION]}
    )

    [request] = await wait_for_pending(handle)
    assert request.kind is RequestKind.CLIENT_TOOL
    assert (request.call_id, request.tool, request.args) == (
        "c1",
        "get_location",
        {"accuracy": "city"},
    )
    assert request.command == (
        f"temporal workflow update execute --workflow-id {handle.id} --name tool_result "
        """--input '{"call_id": "c1", "result": "..."}' """
        f"--address {scripted_agent.client.service_client.config.target_host}"  # (issue 31, item 8)
    )
    offered = scripted_agent.model.requests[0].tools
    assert [t.name for t in offered] == ["calculator", "get_location"]
    assert offered[1].parameters == LOCATION["parameters"]

    decision = await tool_result(handle, {"call_id": "c1", "result": {"city": "Lyon"}, "by": "web"})
    assert (decision.kind, decision.outcome, decision.by) == ("client_tool", "answered", "web")

    result = await handle.result()
    assert result.answer == "You are in Lyon."
    [step] = result.steps
    assert (step.tool, step.status, step.observation) == ("get_location", "ok", '{"city": "Lyon"}')
    sent = scripted_agent.model.requests[1].messages[-1]
    assert (sent.role, sent.content) == ("tool", '{"city": "Lyon"}')


async def test_bad_results_are_refused_before_history_and_an_error_is_observed(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("get_location", {"accuracy": "exact"}, id="c1"),
            sm.call("pick_file", {}, id="c2"),
        ),
        sm.text("done"),
    )
    handle = await scripted_agent.start(
        {"prompt": "Locate me and pick a file", "client_tools": [LOCATION, PICKER]}
    )
    await wait_for_pending(handle, 2)
    accepted = await update_events(handle)

    assert "does not match its result_schema: (root): 'city' is a required property" in (
        await refusal(handle, {"call_id": "c1", "result": {"lat": 45.7}})
    )
    assert "(root): Additional properties are not allowed ('town' was unexpected)" in (
        await refusal(handle, {"call_id": "c1", "result": {"city": "Lyon", "town": "x"}})
    )
    assert "no pending call 'nope' (unknown or already decided); pending: c1, c2" in (
        await refusal(handle, {"call_id": "nope", "result": 1})
    )
    assert 'give exactly one of "result" and "error"' in (
        await refusal(handle, {"call_id": "c1", "result": {"city": "Lyon"}, "error": "x"})
    )
    assert "invalid tool_result input" in await refusal(handle, None)
    with pytest.raises(WorkflowUpdateFailedError):  # a decision is not a tool result
        await handle.execute_update("decide", {"call_id": "c1", "decision": "approve"})

    await tool_result(handle, {"call_id": "c1", "result": {"city": "Lyon", "lat": 45.76}})
    assert "no pending call 'c1' (unknown or already decided); pending: c2" in (
        await refusal(handle, {"call_id": "c1", "result": {"city": "Paris"}})
    )
    assert await update_events(handle) == accepted + 1  # refusals left no trace
    await tool_result(handle, {"call_id": "c2", "error": "the user closed the dialog"})

    result = await handle.result()
    observations = [(s.tool, s.status, s.observation) for s in result.steps]
    closed = "Error: the client could not run pick_file: the user closed the dialog"
    assert observations == [
        ("get_location", "ok", '{"city": "Lyon", "lat": 45.76}'),
        ("pick_file", "error", closed),
    ]


async def test_approval_policy_applies_before_the_client_is_asked(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("get_location", {"accuracy": "exact"}, id="c1")),
        sm.tool_calls(sm.call("pick_file", {}, id="c2")),
        sm.text("ok"),
    )
    policy = {
        "rules": [
            {"tools": "get_location", "action": "ask"},
            {"tools": "pick_file", "action": "deny"},
        ]
    }
    handle = await scripted_agent.start(
        {"prompt": "go", "client_tools": [LOCATION, PICKER], "approval_policy": policy}
    )
    [asked] = await wait_for_pending(handle)
    assert asked.kind is RequestKind.APPROVAL  # a person first ...
    await handle.signal("approve", {"call_id": "c1", "by": "alice"})

    async def client_asked() -> PendingRequest:
        [request] = await wait_for_pending(handle)
        assert request.kind is RequestKind.CLIENT_TOOL, request
        return request

    await eventually(
        client_asked, what="the client asked after the approval"
    )  # ... then the client
    await tool_result(handle, {"call_id": "c1", "result": {"city": "Oslo"}})
    result = await handle.result()
    assert [(s.tool, s.status) for s in result.steps] == [
        ("get_location", "ok"),
        ("pick_file", "denied"),  # denied by the policy: the client is never asked
    ]
    assert result.steps[0].human is not None and result.steps[0].human.by == "alice"


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (
            {"client_tools": [LOCATION, LOCATION]},
            "client tool name(s) declared twice: get_location",
        ),
        (
            {"client_tools": [{**PICKER, "name": "calculator"}]},
            "client_tools: calculator would take the name of a tool the run already has",
        ),
        (
            {"client_tools": [{**PICKER, "result_schema": {"type": "nonsense"}}]},
            "client_tools: pick_file: result_schema is not a valid JSON Schema",
        ),
        ({"client_tools": [{**PICKER, "parameters": {"type": "string"}}]}, "an object schema"),
        ({"client_tools": [{**PICKER, "name": "has space"}]}, "client_tools.0.name"),
        ({"client_tools": [PICKER], "mode": "plan_and_execute"}, 'need mode "react"'),
    ],
)
async def test_bad_client_tools_fail_the_start_naming_the_problem(
    scripted_agent: ScriptedHarness, payload: dict[str, Any], problem: str
) -> None:
    handle = await scripted_agent.start({"prompt": "go", **payload})
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError) and cause.non_retryable
    assert "invalid AgentWorkflow input" in cause.message and problem in cause.message
    assert scripted_agent.model.requests == []


@pytest.mark.parametrize(
    ("action", "observation", "status"),
    [
        ("reject", "Error: the client did not run get_location within 86400s; no result.", "error"),
        ("approve", "The client did not run get_location within 86400s; continue without its "
         "result.", "ok"),
    ],
)  # fmt: skip
async def test_a_client_that_never_answers_times_out_and_says_so(
    time_skipping_env: WorkflowEnvironment,
    tmp_path: Path,
    action: str,
    observation: str,
    status: str,
) -> None:
    model = sm.ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(locate(), sm.text("carried on"))
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, time_skipping_env.client, model, tmp_path)
        result = await time_skipping_env.client.execute_workflow(
            "AgentWorkflow",
            {
                "prompt": "Where am I?",
                "client_tools": [LOCATION],
                "approval_timeout_seconds": 86400,
                "approval_timeout_action": action,
            },
            id=f"client-timeout-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
    [step] = result.steps
    assert (step.observation, step.status) == (observation, status)
    assert "reject" not in step.observation.lower()  # a timeout, not a refusal by anyone


async def test_timeout_action_fail_fails_the_run(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    model = sm.ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(locate())
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, time_skipping_env.client, model, tmp_path)
        with pytest.raises(WorkflowFailureError) as caught:
            await time_skipping_env.client.execute_workflow(
                "AgentWorkflow",
                {
                    "prompt": "Where am I?",
                    "client_tools": [LOCATION],
                    "approval_timeout_seconds": 60,
                    "approval_timeout_action": "fail",
                },
                id=f"client-fail-{uuid.uuid4()}",
                task_queue=queue,
            )
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == HUMAN_WAIT_TIMED_OUT
    assert "client_tool for get_location (c1) timed out after 60s" in cause.message


async def test_the_wait_survives_a_worker_restart(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    model = sm.ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(locate(), sm.text("You are in Rome."))
    queue = f"client-restart-{uuid.uuid4()}"
    client = temporal_env.client
    async with AsyncExitStack() as stack:
        await started_workers(stack, client, model, tmp_path, task_queue=queue)
        handle = await client.start_workflow(
            "AgentWorkflow",
            {"prompt": "Where am I?", "client_tools": [LOCATION]},
            id=f"client-restart-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
        await wait_for_pending(handle)
    # No worker now; a new one (a fresh cache: the run is replayed from history) takes over.
    async with AsyncExitStack() as stack:
        await started_workers(stack, client, model, tmp_path, task_queue=queue)
        [request] = await wait_for_pending(handle)
        assert request.kind is RequestKind.CLIENT_TOOL
        await tool_result(handle, {"call_id": "c1", "result": {"city": "Rome"}})
        result = await handle.result()
    assert result.answer == "You are in Rome."
    assert [s.observation for s in result.steps] == ['{"city": "Rome"}']
    assert len(model.requests) == 2


async def test_a_session_turn_calls_a_client_tool(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(locate(), sm.text("Lyon it is."))
    session = await scripted_agent.client.start_workflow(
        "SessionWorkflow",
        {"agent": {"client_tools": [LOCATION]}},
        id=f"client-session-{uuid.uuid4()}",
        task_queue=scripted_agent.task_queue,
    )
    send = await session.start_update(
        "send", {"text": "Where am I?"}, wait_for_stage=WorkflowUpdateStage.ACCEPTED
    )
    [request] = await wait_for_pending(session)
    assert request.kind is RequestKind.CLIENT_TOOL and session.id in request.command
    assert "does not match its result_schema" in await refusal(
        session, {"call_id": "c1", "result": 3}
    )
    await tool_result(session, {"call_id": "c1", "result": {"city": "Lyon"}})
    turn = await send.result()
    assert turn["answer"] == "Lyon it is."


async def test_agent_run_answers_a_client_tool_from_stdin(
    agent: AgentHarness, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    workflow_id = f"cli-client-{uuid.uuid4()}"
    agent.fake.enqueue(
        fake.tool_calls(fake.call("get_location", {"accuracy": "city"}, id="c1")),
        fake.text("You are in Lyon."),
    )
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"client_tools": [LOCATION]}))
    process = await cli.spawn(
        "run", "Where am I?", "--id", workflow_id, "--input-json", f"@{settings}", stdin=True
    )
    assert process.stdout is not None and process.stdin is not None
    shown = await read_until(process.stdout, "waits for its result")
    assert 'client tool get_location {"accuracy": "city"} waits for its result (call c1)' in shown
    process.stdin.write(b'{"town": "Lyon"}\n{"city": "Lyon"}\n')
    await process.stdin.drain()
    process.stdin.close()
    out, err = await process.communicate()
    text = shown + out.decode()
    assert process.returncode == 0, text + err.decode()
    assert "refused: the result for get_location (c1) does not match its result_schema" in text
    assert "→ sent the result of get_location (c1)" in text
    assert text.rstrip().endswith("You are in Lyon.")
    tool_message = agent.fake.requests[1]["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "c1", "content": '{"city": "Lyon"}'}


def test_result_checks_and_observations_alone() -> None:
    spec = ClientToolSpec.model_validate(LOCATION)
    request = client_tools.answerable(
        approvals.open_request(
            kind=RequestKind.CLIENT_TOOL,
            workflow_id="w 1",
            call_id="c1",
            tool="get_location",
            args={"accuracy": "city"},
            now=__import__("datetime").datetime(2026, 12, 1),
            timeout_seconds=30,
            on_timeout="reject",
        ),
        "w 1",
    )
    assert request.command.startswith("temporal workflow update execute --workflow-id 'w 1' ")
    pending = {"c1": request}
    ok = ToolResultUpdate(call_id="c1", result={"city": "Oslo"})
    assert client_tools.check_result(ok, pending, {"get_location": spec}) is request
    with pytest.raises(approvals.DecisionRefused, match="'\\*'"):
        client_tools.check_result(ToolResultUpdate(call_id="*", result=1), pending, {})
    failed = ToolResultUpdate(call_id="c1", error="denied by the browser")
    decision = client_tools.answered(request, failed, now=request.requested_at)
    assert client_tools.observation(request, decision) == (
        "Error: the client could not run get_location: denied by the browser",
        True,
    )
    timed_out = approvals.timed_out(request, now=request.requested_at)
    assert timed_out.executed_args is None  # nothing runs on the worker on any timeout
    assert client_tools.client_tools_problem([spec], ["get_location"]) is not None
    assert client_tools.client_tools_problem([spec], ["calculator"]) is None
