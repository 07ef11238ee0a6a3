"""Export before reporting: the spans a workflow activation or an activity attempt ends reach
the collector before Temporal hears of that activation's commands or that attempt's result.

Why: a span ended by live workflow code is never ended again by a replay (contrib's replay-safe
spans), so if it sat in a batch processor's queue when its worker was SIGKILLed, it would be
lost for good. Exported first, it is lost only if the export itself fails. The rare case the
other way (exported, then killed before Temporal recorded the activation) re-runs that
activation live elsewhere and exports the span again *with the same ids*, which a backend keeps
as one span.

`HeldSpanProcessor` holds the spans ended inside an activation (`ExportingRunner`, around each
`WorkflowInstance.activate`) or inside an activity attempt (`holding_spans`) and exports them
when that ends, waiting at most `wait_seconds` (an activation is bounded by the SDK's 2 s
deadlock detector); every other span, and any the collector refused, goes through a
`BatchSpanProcessor`. While the collector fails, nothing waits for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from temporalio.bridge.proto.workflow_activation import WorkflowActivation
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails, WorkflowRunner

log = logging.getLogger(__name__)

WAIT_SECONDS = 0.5
"""How long an activation or an attempt waits for its spans' export (then it goes on)."""

_activation = threading.local()
_attempt: ContextVar[list[ReadableSpan] | None] = ContextVar("held_spans", default=None)


def _held() -> list[ReadableSpan] | None:
    """The list this thread's activation, or this task's attempt, holds its spans in."""
    held: list[ReadableSpan] | None = getattr(_activation, "spans", None)
    return held if held is not None else _attempt.get()


class HeldSpanProcessor(SpanProcessor):
    """Holds spans ended in an activation or attempt for `export_now`; batches the rest."""

    def __init__(self, exporter: SpanExporter, wait_seconds: float = WAIT_SECONDS) -> None:
        self._exporter = exporter
        self._batch = BatchSpanProcessor(exporter)
        self._wait = wait_seconds
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="otel-export-now")
        self._healthy = True
        self._closed = False

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self._batch.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self._closed:  # (a provider keeps its processors: a replaced one must not hold)
            return
        held = _held()
        if held is not None:
            held.append(span)
        else:
            self._batch.on_end(span)

    def export_now(self, spans: list[ReadableSpan]) -> None:
        """Export `spans`, waiting up to `wait_seconds` (not at all while the collector fails);
        a failed export hands them to the batch for one more try."""
        if not spans:
            return
        done = self._pool.submit(self._export, spans)
        if not self._healthy:
            return
        try:
            done.result(timeout=self._wait)
        except FutureTimeout:
            log.warning("span export took over %.1f s; not waiting for it", self._wait)
            self._healthy = False

    def _export(self, spans: list[ReadableSpan]) -> None:
        try:
            result = self._exporter.export(spans)
        except Exception:  # an exporter bug must not fail a workflow task
            log.exception("span export failed")
            result = SpanExportResult.FAILURE
        self._healthy = result is SpanExportResult.SUCCESS
        if not self._healthy:
            for span in spans:
                self._batch.on_end(span)

    def shutdown(self) -> None:
        self._closed = True
        self._pool.shutdown(wait=True)
        self._batch.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        try:  # the exports already handed to the pool first
            self._pool.submit(lambda: None).result(timeout=timeout_millis / 1000)
        except FutureTimeout:
            return False
        return self._batch.force_flush(timeout_millis)


@contextmanager
def holding_spans() -> Iterator[list[ReadableSpan]]:
    """Hold the spans this task ends inside the block (an activity attempt)."""
    held: list[ReadableSpan] = []
    token = _attempt.set(held)
    try:
        yield held
    finally:
        _attempt.reset(token)


class ExportingRunner(WorkflowRunner):
    """A workflow runner whose instances export the spans each activation ended (through
    `export`) before the activation's completion goes back to Temporal."""

    def __init__(self, inner: WorkflowRunner, export: Any) -> None:
        self.inner = inner
        self._export = export

    def prepare_workflow(self, defn: Any) -> None:
        self.inner.prepare_workflow(defn)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _ExportingInstance(self.inner.create_instance(det), self._export)

    def set_worker_level_failure_exception_types(self, types: Any) -> None:
        self.inner.set_worker_level_failure_exception_types(types)


class _ExportingInstance(WorkflowInstance):
    def __init__(self, inner: WorkflowInstance, export: Any) -> None:
        self._inner = inner
        self._export = export

    def activate(self, act: WorkflowActivation) -> WorkflowActivationCompletion:
        held: list[ReadableSpan] = []
        _activation.spans = held
        try:
            return self._inner.activate(act)
        finally:
            _activation.spans = None
            if held:
                self._export(held)

    def get_serialization_context(self, command_info: Any) -> Any:
        return self._inner.get_serialization_context(command_info)

    def get_external_store_context(self, command_info: Any) -> Any:
        return self._inner.get_external_store_context(command_info)

    def get_info(self) -> Any:
        return self._inner.get_info()

    def get_thread_id(self) -> int | None:
        return self._inner.get_thread_id()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
