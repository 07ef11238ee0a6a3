"""Optional OpenTelemetry tracing (off by default): spans for starting and running workflows
and activities, through `temporalio.contrib.opentelemetry`.

Enable with `OTEL_ENABLED=1` (needs the `otel` extra: `pip install 'durable-agents[otel]'`).
Spans go to an OTLP collector when `opentelemetry-exporter-otlp` is installed and
`OTEL_EXPORTER_OTLP_ENDPOINT` is set, else to the console.
"""

from __future__ import annotations

from collections.abc import Mapping

from temporalio.client import Interceptor

from durable_agents.runtime.extras import require
from durable_agents.runtime.settings import EnvironmentSettings

SERVICE_NAME = "durable-agents"


def _settings(source: EnvironmentSettings | Mapping[str, str] | None) -> EnvironmentSettings:
    return (
        source if isinstance(source, EnvironmentSettings) else EnvironmentSettings.from_env(source)
    )


def tracing_enabled(source: EnvironmentSettings | Mapping[str, str] | None = None) -> bool:
    """`OTEL_ENABLED` of the settings (or of an environment mapping; default `os.environ`)."""
    return _settings(source).otel_enabled


def tracing_interceptors(
    source: EnvironmentSettings | Mapping[str, str] | None = None,
) -> list[Interceptor]:
    """The client (and so worker) interceptors for tracing: none unless `OTEL_ENABLED`."""
    settings = _settings(source)
    if not settings.otel_enabled:
        return []
    require("otel", "OTEL_ENABLED (OpenTelemetry tracing)")
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    from temporalio.contrib.opentelemetry import TracingInterceptor

    exporter: SpanExporter = ConsoleSpanExporter()
    if settings.otel_exporter_otlp_endpoint:
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        except ImportError:  # pragma: no cover - depends on an optional package
            pass
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return [TracingInterceptor(provider.get_tracer(SERVICE_NAME))]
