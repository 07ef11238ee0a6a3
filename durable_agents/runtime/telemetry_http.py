"""The HTTP API continues its callers' traces: a request's W3C `traceparent` (and `tracestate`,
`baggage`) is the current context while the request is handled, so the runs it starts carry it
into Temporal (contrib's client interceptor puts it in the start's headers) and a run's span is
a child of the caller's. Added to `agent serve` only when telemetry is on (`OTEL_ENABLED`): this
module imports OpenTelemetry only then."""

from __future__ import annotations

import sys
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send


class TraceContext:
    """ASGI middleware: extract the trace context of each HTTP request's headers and attach it
    for the request."""

    def __init__(self, app: ASGIApp) -> None:
        from opentelemetry import context, propagate

        self.app = app
        self._context = context
        self._propagate = propagate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        carrier = {
            key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]
        }
        token = self._context.attach(self._propagate.extract(carrier))
        try:
            await self.app(scope, receive, send)
        finally:
            self._context.detach(token)


def add_trace_context(app: Any) -> None:
    """Add `TraceContext` to a Starlette/FastAPI `app` when telemetry is set up in this process
    (`runtime.telemetry.install`, which `OTEL_ENABLED` runs as the client connects)."""
    telemetry = sys.modules.get("durable_agents.runtime.telemetry")
    if telemetry is not None and telemetry.active():
        app.add_middleware(TraceContext)
