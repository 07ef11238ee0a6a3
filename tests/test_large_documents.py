"""Documents bigger than a payload (`contracts.payload_limits`): with a payload store a 5 MB
prompt, a 5 MB `read_file` result and a 5 MB session message reach the model whole, the context
window still decides what it is sent, and no payload in history comes near 512 KB; without one
the limits and their errors stay. The `agent` CLI reads a stored result, and the codec server
and `temporal workflow show` show a stored payload."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.agent_input import AgentInput
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.payload_limits import limits_context_of
from durable_agents.contracts.session import TurnResult
from durable_agents.loop.validation_errors import describe_validation_error
from durable_agents.runtime.codec_server import CodecHTTPServer
from durable_agents.runtime.payload_store import StoreSpec, payloads_in, reference_of
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from tests.conftest import BIN, FAKE_MODEL, SECRET_API_KEY, started_workers
from tests.session_support import send_with_start
from tests.test_codec import parse_payloads, payloads_json, post
from tests.test_payload_store import stored_client  # noqa: F401

MB = 1_000_000
HISTORY_PAYLOAD_LIMIT = 512 * 1024
"""No payload in a run's history may be larger (issue 21)."""


def document(size: int, label: str) -> str:
    """`size` characters of numbered lines, so a cut or a swap would show."""
    lines = []
    total = 0
    number = 0
    while total < size:
        line = f"{label} line {number:07d}: the quick brown fox jumps over the lazy dog.\n"
        lines.append(line)
        total += len(line)
        number += 1
    return "".join(lines)[:size]


def cause_of(failure: WorkflowFailureError) -> str:
    assert isinstance(failure.cause, ApplicationError)
    return failure.cause.message


async def largest_history_payload(handle: WorkflowHandle[Any, Any]) -> int:
    history = await handle.fetch_history()
    return max(p.ByteSize() for event in history.events for p in payloads_in(event))


def test_the_limits_follow_the_validation_context() -> None:
    asked: list[bool] = []

    def store_on() -> bool:
        asked.append(True)
        return True

    small = {"prompt": "short", "max_observation_chars": 1_000}
    large = {"prompt": "x" * 300_000, "max_observation_chars": 6 * MB}
    AgentInput.model_validate(small, context=limits_context_of(store_on))
    assert asked == []  # the workflow's patch is asked only for a value over today's limits
    AgentInput.model_validate(large, context=limits_context_of(store_on))
    assert asked == [True, True]
    AgentInput.model_validate(large)  # built in code, no context: the raised limits
    with pytest.raises(ValidationError) as refused:
        AgentInput.model_validate(large, context=limits_context_of(False))
    assert describe_validation_error(refused.value) == (
        "max_observation_chars: Input should be less than or equal to 200000 without a payload "
        "store (AGENT_PAYLOAD_STORE allows up to 8000000); prompt: String should have at most "
        "200000 characters without a payload store (AGENT_PAYLOAD_STORE allows up to 8000000)"
    )
    with pytest.raises(ValidationError, match="at most 8000000 characters"):
        AgentInput.model_validate({"prompt": "x" * (8 * MB + 1)})  # over the raised ones too


@pytest.fixture
async def big_model() -> AsyncIterator[tuple[FakeOpenAIServer, OpenAIChatModel]]:
    with FakeOpenAIServer() as server:
        model = OpenAIChatModel(
            api_key=SECRET_API_KEY, base_url=server.base_url, default_model=FAKE_MODEL
        )
        yield server, model
        await model.close()


async def test_a_5_mb_prompt_and_a_5_mb_file_reach_the_model_whole(
    stored_client: tuple[Client, Path],  # noqa: F811
    big_model: tuple[FakeOpenAIServer, OpenAIChatModel],
    tmp_path: Path,
) -> None:
    client, folder = stored_client
    server, model = big_model
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    text = document(5 * MB, "file")
    (workspace / "doc.txt").write_text(text)
    prompt = "Compare doc.txt with this:\n" + document(5 * MB, "prompt")
    server.enqueue(
        fake.tool_calls(fake.call("read_file", {"path": "doc.txt", "max_chars": 6 * MB})),
        fake.tool_calls(fake.call("calculator", {"expression": "2 + 2"})),
        fake.text("They differ in every line's label."),
    )
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, workspace)
        handle = await client.start_workflow(
            "AgentWorkflow",
            {
                "prompt": prompt,
                "tools": ["read_file", "calculator"],
                "max_observation_chars": 6 * MB,
                "max_context_tokens": 2_000_000,
            },
            id=f"large-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
        result = await handle.result()
        status = await handle.query("status", result_type=AgentStatus)  # answered by reference
    assert result.answer == "They differ in every line's label."
    assert status.recent_steps[0].observation == text
    first, second, third = (request.messages for request in server.requests)
    assert first[1]["content"] == prompt  # the 5 MB prompt, whole
    assert second[1]["content"] == prompt and second[-1]["content"] == text  # the file, whole
    # The context window decides: 2M tokens hold the pinned prompt (1.25M) and the newest
    # round; the 5 MB read goes, a note says so.
    assert third[1]["content"] == prompt
    assert all(m.get("content") != text for m in third)
    assert any("were left out to fit the context window" in (m["content"] or "") for m in third)
    assert third[-1]["content"] == "4"
    assert await largest_history_payload(handle) < HISTORY_PAYLOAD_LIMIT
    stored = sorted(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert stored[-1] > 5 * MB  # the prompt and the file went to the store


async def test_a_5_mb_session_message_reaches_the_model_whole(
    stored_client: tuple[Client, Path],  # noqa: F811
    big_model: tuple[FakeOpenAIServer, OpenAIChatModel],
    tmp_path: Path,
) -> None:
    client, _ = stored_client
    server, model = big_model
    message = "Please read this:\n" + document(5 * MB, "message")
    server.enqueue(fake.text("Read it all."))
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, tmp_path)
        session = {"max_message_chars": 6 * MB, "agent": {"max_context_tokens": 2_000_000}}
        turn, handle = await send_with_start(
            client, f"large-session-{uuid.uuid4()}", queue, message, session
        )
        assert isinstance(turn, TurnResult) and turn.answer == "Read it all."
        await handle.signal("end")
        await handle.result()
    [request] = server.requests
    assert request.messages[-1]["content"] == message
    assert await largest_history_payload(handle) < HISTORY_PAYLOAD_LIMIT


async def test_without_a_store_the_limits_and_their_errors_stay(
    temporal_env: WorkflowEnvironment,
    big_model: tuple[FakeOpenAIServer, OpenAIChatModel],
    tmp_path: Path,
) -> None:
    client = temporal_env.client  # no payload store: today's limits
    server, model = big_model
    (tmp_path / "doc.txt").write_text(document(5 * MB, "file"))
    server.enqueue(
        fake.tool_calls(fake.call("read_file", {"path": "doc.txt", "max_chars": 6 * MB})),
        fake.text("I could not read it."),
    )
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, tmp_path)

        async def start(payload: dict[str, Any], workflow: str = "AgentWorkflow") -> Any:
            return await client.start_workflow(
                workflow, payload, id=f"small-{uuid.uuid4()}", task_queue=queue
            )

        too_long = await start({"prompt": "x" * 300_000})
        with pytest.raises(WorkflowFailureError) as refused:
            await too_long.result()
        assert cause_of(refused.value) == (
            "invalid AgentWorkflow input: prompt: String should have at most 200000 characters"
            " without a payload store (AGENT_PAYLOAD_STORE allows up to 8000000)"
        )
        session = await start({"max_message_chars": 6 * MB}, "SessionWorkflow")
        with pytest.raises(WorkflowFailureError) as refused:
            await session.result()
        assert "max_message_chars: Input should be less than or equal to 200000 without a " in (
            cause_of(refused.value)
        )
        # A 5 MB prompt does not even reach a worker: the server refuses the request.
        with pytest.raises(RPCError) as too_big:
            await start({"prompt": document(5 * MB, "prompt")})
        assert "larger than max" in str(too_big.value)  # 4 MB, gRPC's own limit

        run = await start({"prompt": "Read doc.txt", "tools": ["read_file"]})
        result = AgentResult.model_validate(await run.result())
    assert result.answer == "I could not read it."
    observation = server.requests[-1].messages[-1]["content"]
    assert observation == (
        "Error: tool 'read_file': invalid arguments: max_chars: Input should be less than or "
        "equal to 200000 without a payload store (AGENT_PAYLOAD_STORE allows up to 8000000)"
    )


def test_the_cli_and_the_codec_server_read_a_stored_result(
    stored_run: tuple[str, str, Path, str],
) -> None:
    address, workflow_id, folder, answer = stored_run
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "AGENT_"))},
        "AGENT_PAYLOAD_STORE": f"file:{folder}",
    }

    def agent(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "durable_agents.cli.main", "--address", address, *args]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=120, env={**env, **extra}
        )

    shown = agent("result", workflow_id, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["answer"] == answer  # 5 MB, from the store
    blind = agent("result", workflow_id, AGENT_PAYLOAD_STORE="off")
    assert blind.returncode != 0 and "external storage is not configured" in blind.stderr

    # `temporal workflow show` without a codec server: the reference, with the stored size.
    raw = subprocess.run(
        [str(BIN / "temporal"), "workflow", "show", "--workflow-id", workflow_id,
         "--address", address, "--output", "json"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    references = [p for p in _json_payloads(json.loads(raw)) if reference_of(p) is not None]
    assert references, "no stored payload in the history"
    biggest = max(references, key=lambda p: p.external_payloads[0].size_bytes)
    assert biggest.external_payloads[0].size_bytes > 5 * MB
    claim = reference_of(biggest)
    assert claim is not None and claim.driver_name == "agent.file"
    assert int(claim.claim_data["bytes"]) == biggest.external_payloads[0].size_bytes

    # The codec server fetches it from the store (no key: the payloads are not encrypted).
    with CodecHTTPServer(None, port=0, store=StoreSpec("file", folder=folder)) as codec:
        status, _, body = post(codec.url + "/decode", payloads_json([biggest]))
    assert status == 200
    [decoded] = parse_payloads(body)
    assert decoded.metadata["encoding"] == b"json/plain" and decoded.ByteSize() > 5 * MB
    assert "file line 0000000" in decoded.data.decode()


@pytest.fixture
async def stored_run(
    stored_client: tuple[Client, Path],  # noqa: F811
    big_model: tuple[FakeOpenAIServer, OpenAIChatModel],
    tmp_path: Path,
    temporal_env: WorkflowEnvironment,
) -> tuple[str, str, Path, str]:
    """A finished run that read a 5 MB file and answered with it: its result is stored."""
    client, folder = stored_client
    server, model = big_model
    text = document(5 * MB, "file")
    (tmp_path / "doc.txt").write_text(text)
    answer = "Here it is:\n" + text
    server.enqueue(
        fake.tool_calls(fake.call("read_file", {"path": "doc.txt", "max_chars": 6 * MB})),
        fake.streamed(answer, piece_chars=100_000),  # (a real model streams tokens)
    )
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, tmp_path)
        handle = await client.start_workflow(
            "AgentWorkflow",
            {"prompt": "Read doc.txt", "tools": ["read_file"], "max_observation_chars": 6 * MB},
            id=f"stored-{uuid.uuid4()}",
            task_queue=queue,
        )
        await handle.result()
    assert await largest_history_payload(handle) < HISTORY_PAYLOAD_LIMIT
    address = temporal_env.client.service_client.config.target_host
    return address, handle.id, folder, answer


def _json_payloads(node: Any) -> list[Payload]:
    """Every payload in the JSON of `temporal workflow show --output json`."""
    found: list[Payload] = []
    if isinstance(node, dict):
        if "metadata" in node and "data" in node:
            found.append(json_format.ParseDict(node, Payload(), ignore_unknown_fields=True))
        for value in node.values():
            found += _json_payloads(value)
    elif isinstance(node, list):
        for item in node:
            found += _json_payloads(item)
    return found
