"""Optional OpenTelemetry tracing: off by default; when on, every workflow and activity of a
run shows up as a span."""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.demo_model import DemoChatModel
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.runtime.tracing import tracing_enabled, tracing_interceptors
from tests.conftest import started_workers


def test_tracing_is_off_by_default() -> None:
    assert not tracing_enabled({})
    assert tracing_interceptors({}) == []
    assert tracing_enabled({"OTEL_ENABLED": "1"})


async def test_spans_for_workflows_and_activities(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = await Client.connect(
        temporal_env.client.service_client.config.target_host,
        data_converter=pydantic_data_converter,
        interceptors=[TracingInterceptor(provider.get_tracer("test"))],
    )
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, DemoChatModel(), tmp_path)
        result = await client.execute_workflow(
            "AgentWorkflow",
            {"prompt": "What is 2 + 3?"},
            id=f"traced-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
    assert result.answer == "The answer is 5."
    names = {span.name for span in exporter.get_finished_spans()}
    assert {
        "StartWorkflow:AgentWorkflow",
        "RunWorkflow:AgentWorkflow",
        "StartActivity:call_model",
        "RunActivity:call_model",
        "StartActivity:calculator",
        "RunActivity:calculator",
    } <= names
