"""Optional OpenTelemetry tracing (off by default): spans for starting and running workflows
and activities, through `temporalio.contrib.opentelemetry`.

Enable with `OTEL_ENABLED=1` (needs the `otel` extra: `pip install -e '.[otel]'`). Spans go to
an OTLP collector when `opentelemetry-exporter-otlp` is installed and
`OTEL_EXPORTER_OTLP_ENDPOINT` is set, else to the console.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from temporalio.client import Interceptor

SERVICE_NAME = "durable-agents"


def tracing_enabled(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return env.get("OTEL_ENABLED", "").strip().lower() in ("1", "true", "yes", "on")


def tracing_interceptors(env: Mapping[str, str] | None = None) -> list[Interceptor]:
    """The client (and so worker) interceptors for tracing: none unless `OTEL_ENABLED`."""
    env = os.environ if env is None else env
    if not tracing_enabled(env):
        return []
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    from temporalio.contrib.opentelemetry import TracingInterceptor

    exporter: SpanExporter = ConsoleSpanExporter()
    if env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        except ImportError:  # pragma: no cover - depends on an optional package
            pass
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return [TracingInterceptor(provider.get_tracer(SERVICE_NAME))]
