"""Exactly-once telemetry with the GenAI conventions, checked at a real OTLP/HTTP receiver: the
OTLP HTTP exporters send to `testkit/otlp_receiver.py`, which decodes what arrives with
`opentelemetry-proto`. A run gives one span per run, turn, model call, tool call and approval
wait, with the `gen_ai.*` attributes, and replays (a cache of 0 runs, a worker restart mid-run)
add none. The SIGKILL proof is `tests/test_telemetry_kill.py` (marker `slow`, `make test-slow`)."""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.mcp_config import parse_mcp_config
from durable_agents.activities.mcp_servers import McpServers
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.runtime import telemetry
from durable_agents.runtime.workers import WorkerTuning
from durable_agents.testing import fake_openai as fake
from durable_agents.tools.agents import RESEARCHER
from testkit.eventually import eventually
from testkit.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests import scripted_model as sm
from tests.conftest import FAKE_MODEL, AgentHarness, started_workers
from tests.hitl_support import wait_for_pending
from tests.http_api_support import live_api
from tests.mcp_test_servers import HttpMcpServer

PRICED = {"max_usd": 100, "prices": {"*": {"input_per_million": 1000, "output_per_million": 2000}}}


def install_for(receiver: OtlpReceiver, capture_content: bool = False) -> None:
    """This process's telemetry, sending to `receiver` with the real OTLP/HTTP exporters."""
    telemetry.install(
        OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces"),
        OTLPMetricExporter(endpoint=f"{receiver.endpoint}/v1/metrics"),
        capture_content=capture_content,
    )


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    """The receiver, and this process's telemetry sending to it."""
    found = OtlpReceiver()
    install_for(found)
    yield found
    telemetry.close()
    found.close()


async def start(
    stack: AsyncExitStack,
    env: WorkflowEnvironment,
    model: sm.ScriptedChatModel,
    tmp_path: Path,
    task_queue: str | None = None,
    cache: int = 1000,
) -> str:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return await started_workers(
        stack, env.client, model, workspace, task_queue=task_queue,
        tuning=WorkerTuning(max_cached_workflows=cache),
    )  # fmt: skip


def run_input(**extra: Any) -> dict[str, Any]:
    return {"prompt": "add, then write", "tools": ["calculator", "write_file"], **extra}


def script(model: sm.ScriptedChatModel) -> None:
    """Turn 1: a calculator call; turn 2: a write that waits for approval; turn 3: answer."""
    write = {"path": "out.txt", "content": "secret-content-xyz", "overwrite": True}
    model.enqueue(
        sm.tool_calls(sm.call("calculator", {"expression": "2 + 3"}, id="c1")),
        sm.tool_calls(sm.call("write_file", write, id="w1")),
        sm.text("done"),
    )


async def run_span(receiver: OtlpReceiver, handle: WorkflowHandle[Any, Any]) -> ReceivedSpan:
    """The run's span, once it has arrived (it is ended by the run's last workflow task)."""

    def arrived() -> ReceivedSpan:
        found = receiver.spans_where(
            gen_ai__operation__name="invoke_agent", temporal__workflow__id=handle.id
        )
        assert len(found) == 1, found
        return found[0]

    return await eventually(arrived, timeout=10, what="the run's span")


def of_trace(receiver: OtlpReceiver, trace_id: str) -> list[ReceivedSpan]:
    return [span for span in receiver.spans if span.trace_id == trace_id]


def assert_once_each(spans: list[ReceivedSpan]) -> None:
    """Each span id arrived once, and each call, turn and wait has one span."""
    ids = Counter(span.span_id for span in spans)
    assert [i for i, n in ids.items() if n > 1] == []
    keys = Counter(
        (
            span.name,
            span.get("temporal.activity.id"),
            span.get("gen_ai.tool.call.id"),
            span.get("temporal.activity.attempt"),
        )
        for span in spans
    )
    assert [k for k, n in keys.items() if n > 1] == []


async def finish_with_approval(handle: WorkflowHandle[Any, Any]) -> AgentResult:
    await wait_for_pending(handle)
    await handle.signal("approve", {"call_id": "w1", "by": "alice"})
    result = await handle.result()
    assert isinstance(result, AgentResult) and result.answer == "done"
    return result


async def test_a_run_gives_genai_spans_and_metrics(
    receiver: OtlpReceiver, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    model = sm.ScriptedChatModel(default_model=FAKE_MODEL)
    script(model)
    async with AsyncExitStack() as stack:
        queue = await start(stack, temporal_env, model, tmp_path)
        handle = await temporal_env.client.start_workflow(
            "AgentWorkflow", run_input(cost_budget=PRICED, agent_name="adder", agent_version="7"),
            id=f"otel-{uuid.uuid4()}",
            task_queue=queue, result_type=AgentResult,
        )  # fmt: skip
        await finish_with_approval(handle)
        run = await run_span(receiver, handle)
    spans = of_trace(receiver, run.trace_id)
    by_name = {span.name: span for span in spans}
    assert sorted(by_name) == [
        "approval write_file",
        f"chat {FAKE_MODEL}",
        "execute_tool calculator",
        "execute_tool write_file",
        "invoke_agent adder",
        "turn 1",
        "turn 2",
        "turn 3",
    ]
    assert_once_each(spans)
    chats = [span for span in spans if span.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 3
    for chat in chats:
        assert chat.get("gen_ai.request.model") == FAKE_MODEL
        assert (chat.get("gen_ai.usage.input_tokens"), chat.get("gen_ai.usage.output_tokens")) == (
            10,
            5,
        )
        assert chat.get("gen_ai.usage.cache_read.input_tokens") == 0
        assert chat.get("gen_ai.response.finish_reasons") in (["tool_calls"], ["stop"])
        assert chat.get("temporal.activity.attempt") == 1
        assert chat.get("gen_ai.agent.name") == "adder"
    assert (run.get("gen_ai.agent.version"), run.get("gen_ai.request.model")) == ("7", None)
    turns = {span.name: span for span in spans if span.name.startswith("turn ")}
    assert {span.parent_span_id for span in turns.values()} == {run.span_id}
    assert {turns[f"turn {c.get('durable_agents.turn')}"].span_id for c in chats} == {
        c.parent_span_id for c in chats
    }
    calculator = by_name["execute_tool calculator"]
    assert (calculator.get("gen_ai.tool.name"), calculator.get("gen_ai.tool.call.id")) == (
        "calculator",
        "c1",
    )
    assert calculator.parent_span_id == turns["turn 1"].span_id
    approval = by_name["approval write_file"]
    assert approval.get("durable_agents.approval.decision") == "approved"
    assert approval.get("durable_agents.approval.approver") == "alice"
    assert approval.get("gen_ai.tool.call.id") == "w1"
    assert approval.parent_span_id == turns["turn 2"].span_id
    # No tool arguments or results unless asked for (they may hold secrets).
    assert not any("secret-content-xyz" in str(span.attributes) for span in spans)

    telemetry.flush()
    names = {name for name, attributes, _ in receiver.metric_points}
    assert {
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "durable_agents.model.calls",
        "durable_agents.tool.calls",
        "durable_agents.cost",
        "durable_agents.approval.wait",
        "durable_agents.approval.decisions",
    } <= names
    decisions = [a for n, a, _ in receiver.metric_points if n.endswith("approval.decisions")]
    assert {"gen_ai.tool.name": "write_file", "durable_agents.approval.decision": "approved",
            "gen_ai.agent.name": "adder"} in decisions  # fmt: skip


async def test_replays_add_no_spans(
    receiver: OtlpReceiver, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """With no cache every workflow task replays the whole history; then the workers stop while
    the run waits for a person and new ones (another "restart") finish it."""
    model = sm.ScriptedChatModel(default_model=FAKE_MODEL)
    script(model)
    async with AsyncExitStack() as stack:
        queue = await start(stack, temporal_env, model, tmp_path, cache=0)
        handle = await temporal_env.client.start_workflow(
            "AgentWorkflow", run_input(), id=f"otel-replay-{uuid.uuid4()}", task_queue=queue,
            result_type=AgentResult,
        )  # fmt: skip
        await wait_for_pending(handle)
    async with AsyncExitStack() as stack:
        await start(stack, temporal_env, model, tmp_path, task_queue=queue)
        await finish_with_approval(handle)
        run = await run_span(receiver, handle)
    spans = of_trace(receiver, run.trace_id)
    assert_once_each(spans)
    # The new worker's context cache is empty: its first call is a miss, a call of its own.
    [miss] = [span for span in spans if span.get("durable_agents.context_cache_miss")]
    spans.remove(miss)
    assert Counter(span.name for span in spans) == {
        "invoke_agent AgentWorkflow": 1,
        "turn 1": 1,
        "turn 2": 1,
        "turn 3": 1,
        f"chat {FAKE_MODEL}": 3,
        "execute_tool calculator": 1,
        "execute_tool write_file": 1,
        "approval write_file": 1,
    }
    # The second worker's spans hang off the first's: the ids are the run's own.
    turns = [span for span in spans if span.name.startswith("turn ")]
    assert {span.parent_span_id for span in turns} == {run.span_id}


async def test_the_trace_reaches_child_runs_and_mcp_servers(
    receiver: OtlpReceiver, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A sub-agent's run, and an MCP server's handling of a call (the SDK reads the trace
    context from the request's `_meta`), are spans of the parent run's trace."""

    def script(request: ModelRequest) -> sm.Completion | str:
        tool_results = sum(1 for m in request.messages if m.role == "tool")
        if request.messages[0].content == RESEARCHER.system_prompt:
            return (
                "the researcher found 42"
                if tool_results
                else sm.tool_calls(sm.call("calculator", {"expression": "6*7"}, id="r1"))
            )
        if tool_results == 0:
            return sm.tool_calls(sm.call("researcher", {"task": "6*7?"}, id="d1"))
        if tool_results == 1:
            return sm.tool_calls(sm.call("web__echo", {"text": "hi"}, id="m1"))
        return "done"

    model = sm.ScriptedChatModel(default_model=FAKE_MODEL)
    model.set_handler(script)
    with HttpMcpServer() as web:
        servers = McpServers(parse_mcp_config({"mcpServers": {"web": {"url": web.url}}}))
        async with AsyncExitStack() as stack:
            workspace = tmp_path / "workspace"
            workspace.mkdir()
            queue = await started_workers(stack, temporal_env.client, model, workspace, mcp=servers)
            handle = await temporal_env.client.start_workflow(
                "AgentWorkflow",
                {"prompt": "delegate, then echo", "agents": ["researcher"], "mcp_servers": ["web"]},
                id=f"otel-child-{uuid.uuid4()}", task_queue=queue, result_type=AgentResult,
            )  # fmt: skip
            assert (await handle.result()).answer == "done"
            run = await run_span(receiver, handle)
            child = await run_span(receiver, temporal_env.client.get_workflow_handle(
                f"{handle.id}/researcher-d1"
            ))  # fmt: skip
    spans = {span.span_id: span for span in of_trace(receiver, run.trace_id)}
    assert child.trace_id == run.trace_id
    assert spans[child.parent_span_id].name == "turn 1"  # the parent's turn that called it
    [researcher_calc] = [s for s in spans.values() if s.get("gen_ai.tool.call.id") == "r1"]
    assert researcher_calc.trace_id == run.trace_id
    [echo] = [s for s in spans.values() if s.name == "execute_tool web__echo"]
    assert (echo.get("gen_ai.tool.type"), echo.get("gen_ai.tool.call.id")) == ("extension", "m1")

    telemetry.flush()  # the server's span is batched (it ends outside any activity)

    def handled() -> ReceivedSpan:
        found = [s for s in of_trace(receiver, run.trace_id) if s.name == "tools/call echo"]
        assert len(found) == 1, found
        return found[0]

    server = await eventually(handled, timeout=10, what="the MCP server's span")
    sent = spans[server.parent_span_id]  # the MCP client's request, inside the tool's span
    assert sent.parent_span_id == echo.span_id


async def test_an_http_callers_traceparent_continues_into_the_run(
    receiver: OtlpReceiver, agent: AgentHarness
) -> None:
    """`agent serve` takes the caller's W3C `traceparent`: FastAPI's own telemetry continues it
    in its span of the request, and the server's client (with contrib's interceptor, as
    `OTEL_ENABLED` connects it) carries that into the run, whose span is the request's child."""
    agent.fake.enqueue(fake.text("hello"))
    config = agent.client.config()
    config["interceptors"] = telemetry.client_interceptors()
    traced = Client(**config)
    trace_id, caller_span = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    workflow_id = f"otel-http-{uuid.uuid4()}"
    async with live_api(dataclasses.replace(agent, client=traced)) as api:
        response = await api.http.post(
            "/v1/runs",
            json={"prompt": "hi", "id": workflow_id},
            headers={"traceparent": f"00-{trace_id}-{caller_span}-01"},
        )
        assert response.status_code == 201, response.text
        handle = agent.client.get_workflow_handle(workflow_id, result_type=AgentResult)
        assert (await handle.result()).answer == "hello"
    run = await run_span(receiver, handle)
    telemetry.flush()  # FastAPI's own span of the request is batched

    def between() -> list[str]:
        """The spans from the run's up to the caller's, which must all have arrived."""
        spans = {span.span_id: span for span in of_trace(receiver, trace_id)}
        names, parent = [], run.parent_span_id
        while parent != caller_span:
            assert parent in spans, sorted(span.name for span in spans.values())
            names.append(spans[parent].name)
            parent = spans[parent].parent_span_id
        return names

    assert run.trace_id == trace_id
    assert "POST /v1/runs" in await eventually(between, timeout=10, what="the request's spans")


@pytest.fixture
def capturing(receiver: OtlpReceiver) -> Iterator[None]:
    """Telemetry with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` on, for one test."""
    assert telemetry.capture_content_from_env({telemetry.CAPTURE_CONTENT_ENV: "true"})
    install_for(receiver, capture_content=True)
    yield
    install_for(receiver)


async def test_tool_arguments_and_results_are_recorded_only_when_asked(
    capturing: None, receiver: OtlpReceiver, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    model = sm.ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(
        sm.tool_calls(sm.call("calculator", {"expression": "2 + 3"}, id="c1")), sm.text("5")
    )
    async with AsyncExitStack() as stack:
        queue = await start(stack, temporal_env, model, tmp_path)
        handle = await temporal_env.client.start_workflow(
            "AgentWorkflow", {"prompt": "add", "tools": ["calculator"]},
            id=f"otel-content-{uuid.uuid4()}", task_queue=queue, result_type=AgentResult,
        )  # fmt: skip
        await handle.result()
        run = await run_span(receiver, handle)
    [calculator] = [s for s in of_trace(receiver, run.trace_id) if s.name.endswith("calculator")]
    assert calculator.get("gen_ai.tool.call.arguments") == '{"expression": "2 + 3"}'
    assert calculator.get("gen_ai.tool.call.result") == "5"
