"""A real OTLP/HTTP receiver for the tests and the telemetry benchmark: accepts the protobuf
`ExportTraceServiceRequest` and `ExportMetricsServiceRequest` that OpenTelemetry's OTLP HTTP
exporters POST to `/v1/traces` and `/v1/metrics` (decoded with `opentelemetry-proto`), and keeps
what arrived."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(each) for each in value.array_value.values]
    return getattr(value, kind) if kind else None


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the collector got it."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    status_code: int
    service: str

    def get(self, key: str) -> Any:
        return self.attributes.get(key)


@dataclass
class OtlpReceiver:
    """The receiver, listening on a free port of 127.0.0.1 until `close`."""

    spans: list[ReceivedSpan] = field(default_factory=list)
    metric_points: list[tuple[str, dict[str, Any], float]] = field(default_factory=list)
    requests: int = 0

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/traces":
                    receiver._take_spans(body)
                    answer = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    receiver._take_metrics(body)
                    answer = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        """The base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _take_spans(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            status_code=span.status.code,
                            service=str(resource.get("service.name", "")),
                        )
                    )
        with self._lock:
            self.requests += 1
            self.spans.extend(found)

    def _take_metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        found = []
        for resource_metrics in request.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    for name, attributes, value in _points(metric):
                        found.append((name, attributes, value))
        with self._lock:
            self.metric_points.extend(found)

    def spans_where(self, **attributes: Any) -> list[ReceivedSpan]:
        """The spans whose attributes include these (dots spelled `__`: `gen_ai__tool__name`)."""
        wanted = {key.replace("__", "."): value for key, value in attributes.items()}
        with self._lock:
            return [
                span
                for span in self.spans
                if all(span.attributes.get(k) == v for k, v in wanted.items())
            ]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _points(metric: Any) -> Iterator[tuple[str, dict[str, Any], float]]:
    kind = metric.WhichOneof("data")
    for point in getattr(metric, kind).data_points:
        attributes = {a.key: _value(a.value) for a in point.attributes}
        if kind == "histogram":
            yield metric.name, attributes, float(point.sum)
        else:
            yield metric.name, attributes, float(point.as_double or point.as_int)


def main() -> None:
    """Serve until killed, in a process of its own (`python -m testkit.otlp_receiver`): prints
    `READY <endpoint>`, then keeps only a count of the spans it received."""
    receiver = OtlpReceiver()
    print(f"READY {receiver.endpoint}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
