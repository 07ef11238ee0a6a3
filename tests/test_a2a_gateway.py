"""`agent a2a`: the A2A gateway as a real subprocess (`python -m cli.main ... a2a --port N`),
reached by `a2a-sdk`'s own client (`a2a.client.create_client`, JSON-RPC, streaming and not), in
front of the real dev server and the in-process worker whose model is the real `openai` client
talking to the fake model server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_message_text
from a2a.types.a2a_pb2 import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from google.protobuf import json_format
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from durable_agents.testing import fake_openai as fake
from durable_agents.tools.agents import RESEARCHER
from tests.conftest import AgentHarness
from tests.test_mcp_gateway import http_gateway, workflow_ids


@asynccontextmanager
async def a2a_client(port: int, *, streaming: bool) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(60, read=120)) as http:
        client = await create_client(
            f"http://127.0.0.1:{port}/", ClientConfig(streaming=streaming, httpx_client=http)
        )
        try:
            yield client
        finally:
            await client.close()


def user_message(
    text: str, *, task: Task | None = None, metadata: dict[str, Any] | None = None
) -> SendMessageRequest:
    message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task is not None:
        message.task_id, message.context_id = task.id, task.context_id
    if metadata is not None:
        message.metadata.update(metadata)
    return SendMessageRequest(message=message)


async def stream(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


def statuses(events: list[StreamResponse]) -> list[tuple[str, str]]:
    """(state, text) of each status update, in order."""
    return [
        (TaskState.Name(e.status_update.status.state),
         get_message_text(e.status_update.status.message))
        for e in events
        if e.HasField("status_update")
    ]  # fmt: skip


def last_task(events: list[StreamResponse]) -> Task:
    [response] = events  # a non-streaming call answers with one task
    assert response.HasField("task"), response
    return response.task


async def test_agent_card_lists_the_profiles_as_skills(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    async with http_gateway(agent, temporal_env, "a2a") as port, httpx.AsyncClient() as http:
        card = (await http.get(f"http://127.0.0.1:{port}/.well-known/agent-card.json")).json()
    skills = {s["id"]: s for s in card["skills"]}
    assert set(skills) == {"assistant", "researcher"}
    assert skills["researcher"]["description"] == RESEARCHER.description
    assert card["capabilities"]["streaming"] is True
    assert card["supportedInterfaces"][0]["url"] == f"http://127.0.0.1:{port}/"


async def test_streamed_task_waits_for_an_approval_and_the_next_message_answers_it(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("calculator", {"expression": "17 * 25"}, id="c1")),
        fake.tool_calls(fake.call("write_file", {"path": "sum.txt", "content": "425"}, id="w1")),
        fake.text("I saved 425 to sum.txt."),
    )
    async with (
        http_gateway(agent, temporal_env, "a2a") as port,
        a2a_client(port, streaming=True) as client,
    ):
        first = await stream(client, user_message("Work out 17 * 25 and save it to sum.txt"))
        states = statuses(first)
        assert states[0][0] == "TASK_STATE_WORKING" and states[0][1].startswith("started run a2a-")
        assert ("TASK_STATE_WORKING", 'calculator {"expression": "17 * 25"} → 425') in [
            (s, t.removeprefix("✓ ")) for s, t in states
        ]
        assert states[-1][0] == "TASK_STATE_INPUT_REQUIRED"
        assert "write_file" in states[-1][1] and "Reply 'approve'" in states[-1][1]
        waiting = first[-1].status_update
        shown = json_format.MessageToDict(waiting.status.message.metadata)
        assert (shown["call_id"], shown["kind"]) == ("w1", "approval")
        task = Task(id=waiting.task_id, context_id=waiting.context_id)
        assert not (agent.workspace / "sum.txt").exists()

        unclear = await stream(client, user_message("hmm, maybe later", task=task))
        assert statuses(unclear)[-1][0] == "TASK_STATE_INPUT_REQUIRED"
        assert "not understood as a decision" in statuses(unclear)[-1][1]

        second = await stream(client, user_message("approve", task=task))
        states = statuses(second)
        assert states[0] == ("TASK_STATE_WORKING", "approved w1 by a2a client")
        assert states[-1] == ("TASK_STATE_COMPLETED", "I saved 425 to sum.txt.")
        [artifact] = [e.artifact_update.artifact for e in second if e.HasField("artifact_update")]
        assert artifact.name == "answer"
        assert artifact.parts[0].text == "I saved 425 to sum.txt."
    assert (agent.workspace / "sum.txt").read_text() == "425"
    handle = temporal_env.client.get_workflow_handle(f"a2a-{task.id}")
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.COMPLETED
    assert (await description.memo())["started_via"] == "a2a"


async def test_question_and_rejection_without_streaming(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("ask_user", {"question": "Which file?"}, id="q1")),
        fake.tool_calls(fake.call("write_file", {"path": "x.txt", "content": "x"}, id="w2")),
        fake.text("Understood, I left x.txt alone."),
    )
    async with (
        http_gateway(agent, temporal_env, "a2a") as port,
        a2a_client(port, streaming=False) as client,
    ):
        task = last_task(
            await stream(
                client,
                user_message(
                    "Write a file",
                    metadata={"agent": "assistant", "options": {"max_iterations": 5}},
                ),
            )
        )
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "asks: Which file?" in get_message_text(task.status.message)

        task = last_task(await stream(client, user_message("x.txt", task=task)))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "write_file" in get_message_text(task.status.message)

        task = last_task(await stream(client, user_message("no: not today", task=task)))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.artifacts[0].parts[0].text == "Understood, I left x.txt alone."
    result = await temporal_env.client.get_workflow_handle(f"a2a-{task.id}").result()
    steps = {s["call_id"]: s for s in result["steps"]}
    assert steps["q1"]["observation"] == "x.txt"
    assert steps["w2"]["status"] == "rejected"
    assert steps["w2"]["human"]["reason"] == "not today"
    assert not (agent.workspace / "x.txt").exists()


@pytest.mark.parametrize("streaming", [False, True])
async def test_bad_requests_are_json_rpc_errors_and_start_nothing(
    agent: AgentHarness, temporal_env: WorkflowEnvironment, streaming: bool
) -> None:
    cases: list[tuple[SendMessageRequest, str]] = [
        (user_message("hi", metadata={"agent": "nope"}),
         "unknown agent 'nope'; agents: assistant, researcher"),
        (user_message("hi", metadata={"options": {"max_iterations": 0}}),
         "max_iterations: Input should be greater than or equal to 1"),
        (user_message("hi", metadata={"options": {"parent": {"workflow_id": "x"}}}),
         "parent: Extra inputs are not permitted"),
        (user_message("hi", metadata={"options": "fast"}), "metadata.options"),
        (user_message("x" * 200_001), "prompt: String should have at most 200000 characters"),
        (user_message("   "), "the prompt holds no visible text"),
    ]  # fmt: skip
    before = set(await workflow_ids(temporal_env, agent.task_queue))
    async with (
        http_gateway(agent, temporal_env, "a2a") as port,
        a2a_client(port, streaming=streaming) as client,
    ):
        for request, expected in cases:
            with pytest.raises(Exception) as refused:
                await stream(client, request)
            assert expected in str(refused.value), (expected, refused.value)
    assert set(await workflow_ids(temporal_env, agent.task_queue)) == before
