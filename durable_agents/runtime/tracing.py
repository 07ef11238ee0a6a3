"""Optional OpenTelemetry telemetry (off by default): the GenAI spans and metrics of
`runtime.telemetry`, exactly once however often a run replays (docs/how-to/telemetry.md).

Enable with `OTEL_ENABLED=1` (needs the `otel` extra: `pip install 'durable-agents[otel]'`).
Spans and metrics go over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else the spans
go to the console.
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
    """The client interceptors for telemetry (none unless `OTEL_ENABLED`): contrib's, which
    carries the trace context into runs. Sets the process's telemetry up the first time; the
    workers built on the client add the rest (`runtime.workers.with_telemetry`)."""
    settings = _settings(source)
    if not settings.otel_enabled:
        return []
    require("otel", "OTEL_ENABLED (OpenTelemetry tracing)")
    from durable_agents.runtime import telemetry

    telemetry.install_from_environment(settings.otel_exporter_otlp_endpoint)
    return list(telemetry.client_interceptors())
