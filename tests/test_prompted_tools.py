"""Prompted tool calling (`MODEL_TOOL_CALLING=prompted`, or `"tool_calling": "prompted"` for a
provider): the tools go in the prompt, the calls come back in the reply's text.

The pure parts (`activities/prompted_tools.py`) are checked directly; the model over real HTTP
against the fake server (what it sends, what it reads, plain and streamed); and a whole run
through the real worker, where a calculator call written as fenced JSON is run and answered.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.activities.prompted_tools import (
    NEXT_STEP,
    prompted_messages,
    read_prompted_calls,
)
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.runtime.models import chat_model_for
from durable_agents.runtime.settings import EnvironmentSettings
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from tests.conftest import activity_types, local_activities, started_workers
from tests.test_streaming_wire import KEY, PROMPT, TOOLS


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def prompted(server: FakeOpenAIServer, *, streaming: bool = True) -> OpenAIChatModel:
    return OpenAIChatModel(
        api_key=KEY,
        base_url=server.base_url,
        default_model="m-1",
        streaming=streaming,
        tool_calling="prompted",
    )


# -- reading calls from text -------------------------------------------------------------------


def test_fenced_json_blocks_are_calls_and_the_text_around_them_stays() -> None:
    text, calls = read_prompted_calls(
        'Let me work it out.\n```json\n{"name": "calculator", "arguments": {"expression": '
        '"17 * 25"}}\n```\n```json\n{\n  "name": "calculator",\n  "arguments": {\n'
        '    "expression": "120 / 4"\n  }\n}\n```'
    )

    assert text == "Let me work it out."
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("calculator", {"expression": "17 * 25"}),
        ("calculator", {"expression": "120 / 4"}),
    ]
    assert len({c.id for c in calls}) == 2 and all(c.id.startswith("call_") for c in calls)


def test_tool_call_tags_are_calls_too() -> None:
    text, calls = read_prompted_calls(
        '<tool_call>\n{"name": "weather", "parameters": {"city": "Paris"}}\n</tool_call>'
    )

    assert text is None
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("weather", {"city": "Paris"})]


@pytest.mark.parametrize(
    "content",
    [
        "Paris is the capital of France.",
        '```json\n{"city": "Tokyo", "country": "Japan"}\n```',  # a JSON answer, not a call
        "```python\nprint('hello')\n```",
        "```json\n{not json}\n```",
        None,
        "",
    ],
)
def test_text_without_a_call_is_left_alone(content: str | None) -> None:
    assert read_prompted_calls(content) == (content, [])


def test_the_conversation_goes_without_tools_and_the_tool_role() -> None:
    call = ToolCall(id="c1", name="calculator", arguments='{"expression": "17 * 25"}')
    messages = [
        *PROMPT,
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage.tool_result("c1", "425"),
    ]

    wire = prompted_messages(messages, TOOLS)

    assert [m["role"] for m in wire] == ["system", "user", "assistant", "user"]
    assert wire[0]["content"].startswith("Be brief.\n\n# Tools")
    assert '"name": "calculator"' in wire[0]["content"]
    assert wire[2]["content"] == (
        '```json\n{"name": "calculator", "arguments": {"expression": "17 * 25"}}\n```'
    )
    assert wire[3]["content"] == f"<tool_response>\n425\n</tool_response>\n{NEXT_STEP}"


# -- over HTTP ---------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [True, False])
async def test_the_model_reads_a_call_from_the_text(
    server: FakeOpenAIServer, streaming: bool
) -> None:
    model = prompted(server, streaming=streaming)
    written = (
        'I will compute it.\n```json\n{"name": "calculator", "arguments": {"expression": "6*7"}}'
        "\n```"
    )
    server.enqueue(fake.streamed(written) if streaming else fake.text(written))

    reply = await model.complete(ModelRequest(messages=PROMPT, tools=TOOLS))

    body = server.last_request.body
    assert "tools" not in body and "tool_choice" not in body
    assert "# Tools" in body["messages"][0]["content"]
    assert reply.content == "I will compute it."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("calculator", '{"expression": "6*7"}')
    ]
    assert reply.finish_reason == "tool_calls"
    await model.close()


async def test_native_stays_the_default(server: FakeOpenAIServer) -> None:
    settings = EnvironmentSettings.from_env(
        {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url, "MODEL": "m-1"}
    )
    model = chat_model_for(settings)
    assert isinstance(model, OpenAIChatModel) and model.tool_calling == "native"
    # (A reply that is nothing but calls of offered tools is read as calls in native mode too:
    # tests/test_real_quirks.py. Text around a block keeps it text.)
    written = (
        'You could call it so:\n```json\n{"name": "calculator", "arguments": '
        '{"expression": "6*7"}}\n```\nbut 6*7 is 42.'
    )
    server.enqueue(written)

    reply = await model.complete(ModelRequest(messages=PROMPT, tools=TOOLS))

    assert server.last_request.body["tools"][0]["function"]["name"] == "calculator"
    assert reply.tool_calls == [] and reply.content == written
    await model.close()


def test_model_tool_calling_prompted_is_read_from_the_environment() -> None:
    settings = EnvironmentSettings.from_env(
        {"OPENAI_API_KEY": KEY, "MODEL_TOOL_CALLING": "prompted", "MODEL": "m-1"}
    )
    model = chat_model_for(settings)
    assert isinstance(model, OpenAIChatModel) and model.tool_calling == "prompted"


async def test_a_run_in_prompted_mode_calls_the_tool_and_answers(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_model.enqueue(
        fake.streamed(
            '```json\n{"name": "calculator", "arguments": {"expression": "17 * 25"}}\n```'
        ),
        fake.streamed("17 shirts at 25 dollars cost 425 dollars."),
    )
    model = prompted(fake_model)
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, temporal_env.client, model, tmp_path)
        handle = await temporal_env.client.start_workflow(
            "AgentWorkflow",
            {"prompt": "How much do 17 shirts at 25 dollars cost?", "tools": ["calculator"]},
            id=f"prompted-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
        result = await handle.result()
    await model.close()

    assert result.stop_reason == "completed"
    assert [(s.tool, s.observation) for s in result.steps] == [("calculator", "425")]
    assert "425" in result.answer
    assert await activity_types(handle) == ["call_model", "call_model"]
    assert [name for name, _ in await local_activities(handle)] == ["calculator"]
    second = fake_model.requests[1].messages
    assert (
        second[-1]["role"] == "user"
        and "<tool_response>\n425\n</tool_response>" in second[-1]["content"]
    )
