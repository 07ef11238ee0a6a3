"""Exactly-once telemetry with the OpenTelemetry GenAI semantic conventions (worker side).

What it emits (docs/how-to/telemetry.md):

- a span per run (`invoke_agent`), per turn (`turn N`) and per wait for a person
  (`approval <tool>`), from workflow code, through `temporalio.contrib.opentelemetry`'s
  replay-safe tracer provider: their ids come from the workflow's deterministic random, a span
  is ended only by live (not replaying) workflow code, so however often a run is replayed
  (cache eviction, a worker restart, another worker after a SIGKILL) each is exported once,
  by the worker that ends it;
- a span per model call (`chat <model>`) and per tool call (`execute_tool <tool>`) from the
  activity side: an activity runs once per attempt and never on replay, so each call yields
  one span per attempt (`temporal.activity.attempt`), exported before the attempt's result is
  reported to Temporal (`flush`);
- metrics per agent and model: tokens, cost, calls, approval wait time and outcomes.

Trace context crosses Temporal (client -> run -> activities and child runs) through contrib's
`OpenTelemetryInterceptor`; the MCP SDK puts it in each request's `_meta`; `agent serve`
continues an incoming `traceparent` (FastAPI's own telemetry, then the client's interceptor).

Tool arguments and results are never recorded unless
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (the GenAI instrumentations' switch).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import opentelemetry.context
from opentelemetry import baggage, trace
from opentelemetry.metrics import Counter, Histogram, Meter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue
from temporalio import activity, workflow
from temporalio.common import RawValue
from temporalio.contrib.opentelemetry import (
    OpenTelemetryInterceptor,
    ReplaySafeMeterProvider,
    ReplaySafeTracerProvider,
    create_tracer_provider,
)
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from durable_agents.contracts.mcp import McpCallRequest
from durable_agents.contracts.model_io import ModelReply, ModelRequest
from durable_agents.contracts.tool_io import ToolInvocation, ToolOutput
from durable_agents.runtime import telemetry_workflow
from durable_agents.runtime.telemetry_export import (
    ExportingRunner,
    HeldSpanProcessor,
    holding_spans,
)

log = logging.getLogger(__name__)

SERVICE_NAME = "durable-agents"
INSTRUMENTATION = "durable_agents"
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
AGENT_BAGGAGE = gen_ai.GEN_AI_AGENT_NAME
"""The baggage entry that carries the run's agent name to its activities (and child runs)."""
FLUSH_TIMEOUT_MILLIS = 5_000
"""How long `flush` waits for the exporters."""

AGENT_WORKFLOWS = frozenset({"AgentWorkflow", "SessionWorkflow"})
"""The workflow types whose runs get a run span (and the turn and approval hooks)."""
ATTEMPT = "temporal.activity.attempt"
WORKFLOW_ID = "temporal.workflow.id"
RUN_ID = "temporal.workflow.run_id"
ACTIVITY_ID = "temporal.activity.id"


class Instruments:
    """The metrics, per agent and model (`gen_ai.agent.name`, `gen_ai.request.model`)."""

    def __init__(self, meter: Meter) -> None:
        self.token_usage: Histogram = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens per model call"
        )
        self.duration: Histogram = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="Model call duration"
        )
        self.cached_tokens: Counter = meter.create_counter(
            "durable_agents.tokens.cached", unit="{token}", description="Prompt tokens cached"
        )
        self.model_calls: Counter = meter.create_counter(
            "durable_agents.model.calls", unit="{call}", description="Model call attempts"
        )
        self.tool_calls: Counter = meter.create_counter(
            "durable_agents.tool.calls", unit="{call}", description="Tool call attempts"
        )
        self.cost: Counter = meter.create_counter(
            "durable_agents.cost", unit="USD", description="Priced model spending"
        )
        self.approval_wait: Histogram = meter.create_histogram(
            "durable_agents.approval.wait", unit="s", description="Time a call waited for a person"
        )
        self.approvals: Counter = meter.create_counter(
            "durable_agents.approval.decisions", unit="{decision}", description="Decisions"
        )


@dataclass
class _Sinks:
    """Where this process's telemetry goes (replaced by the next `install`)."""

    span_processor: HeldSpanProcessor | None
    meter_provider: MeterProvider
    instruments: Instruments
    capture_content: bool


_provider: ReplaySafeTracerProvider | None = None
_sinks: _Sinks | None = None


def _resource() -> Resource:
    return Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", SERVICE_NAME)})


def tracer_provider() -> ReplaySafeTracerProvider:
    """The process's global tracer provider: contrib's replay-safe one (set once)."""
    global _provider
    if _provider is None:
        _provider = create_tracer_provider(resource=_resource())
        trace.set_tracer_provider(_provider)
        if trace.get_tracer_provider() is not _provider:
            raise RuntimeError(
                "another OpenTelemetry tracer provider is already set in this process; "
                "durable-agents needs contrib's replay-safe one (set it up first)"
            )
    return _provider


def capture_content_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Whether tool arguments and results go into spans (off unless the GenAI switch is on)."""
    value = (environ if environ is not None else os.environ).get(CAPTURE_CONTENT_ENV, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def install(
    span_exporter: SpanExporter | None,
    metric_exporter: MetricExporter | None = None,
    *,
    capture_content: bool = False,
    metric_interval_millis: float = 10_000,
) -> None:
    """Send this process's telemetry to `span_exporter` and `metric_exporter` (the previous
    ones are flushed and closed first): the process's spans, and the worker interceptors that
    `worker_interceptors` gives from then on."""
    provider = tracer_provider()
    close()
    processor = HeldSpanProcessor(span_exporter) if span_exporter is not None else None
    if processor is not None:
        provider.add_span_processor(processor)
    readers = (
        [PeriodicExportingMetricReader(metric_exporter, metric_interval_millis)]
        if metric_exporter is not None
        else []
    )
    meters = MeterProvider(resource=_resource(), metric_readers=readers)
    instruments = Instruments(ReplaySafeMeterProvider(meters).get_meter(INSTRUMENTATION))
    global _sinks
    _sinks = _Sinks(processor, meters, instruments, capture_content)


def install_from_environment(otlp_endpoint: str | None) -> None:
    """`install` as the standard variables say: spans over OTLP/HTTP (protobuf) when
    `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, else to the
    console; metrics over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` or
    `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` is set and `OTEL_METRICS_EXPORTER` is not `none`
    (Jaeger takes no metrics). The exporters read the rest (`OTEL_EXPORTER_OTLP_HEADERS`,
    timeouts, compression) themselves. Once per process: later calls keep the first set-up."""
    if _sinks is not None:
        return
    environ = os.environ
    spans: SpanExporter
    if otlp_endpoint or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        spans = OTLPSpanExporter()
    else:
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        spans = ConsoleSpanExporter()
    metrics: MetricExporter | None = None
    wants_metrics = environ.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower() != "none"
    if wants_metrics and (otlp_endpoint or environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        metrics = OTLPMetricExporter()
    install(spans, metrics, capture_content=capture_content_from_env())


def active() -> bool:
    """Whether `install` set up telemetry in this process."""
    return _sinks is not None


def export_now(spans: list[ReadableSpan]) -> None:
    """Export the spans an activation or an attempt ended, before it reports
    (`telemetry_export`); dropped once telemetry is closed."""
    sinks = _sinks
    if sinks is not None and sinks.span_processor is not None:
        sinks.span_processor.export_now(spans)


def flush(timeout_millis: int = FLUSH_TIMEOUT_MILLIS) -> None:
    """Export the spans ended so far (and the metrics) now."""
    sinks = _sinks
    if sinks is None:
        return
    if sinks.span_processor is not None:
        sinks.span_processor.force_flush(timeout_millis)
    sinks.meter_provider.force_flush(timeout_millis)


def close() -> None:
    """Flush and stop the current exporters (spans ended later are dropped)."""
    global _sinks
    sinks, _sinks = _sinks, None
    if sinks is None:
        return
    if sinks.span_processor is not None:
        sinks.span_processor.shutdown()
    sinks.meter_provider.shutdown()


def client_interceptors() -> list[OpenTelemetryInterceptor]:
    """What a client needs to carry its trace context into the runs it starts and signals."""
    return [OpenTelemetryInterceptor()]


def worker_interceptors(already: Sequence[object] = ()) -> list[Interceptor]:
    """The worker interceptors of telemetry (none unless `install` ran): contrib's (context
    from headers to workflows and activities, unless `already` has it, e.g. on the client)
    first, then the spans and metrics of this module."""
    if not active():
        return []
    found = any(isinstance(each, OpenTelemetryInterceptor) for each in already)
    ours: list[Interceptor] = [] if found else [OpenTelemetryInterceptor()]
    return [*ours, AgentTelemetryInterceptor()]


def worker_options(options: Mapping[str, Any], already: Sequence[object]) -> dict[str, Any]:
    """`Worker` keyword arguments with telemetry: `worker_interceptors` after the others, and
    OpenTelemetry passed through the workflow sandbox (as contrib's `OpenTelemetryPlugin`
    does), so workflow code shares the process's providers."""
    runner = options.get("workflow_runner")
    if isinstance(runner, SandboxedWorkflowRunner):
        runner = dataclasses.replace(
            runner, restrictions=runner.restrictions.with_passthrough_modules("opentelemetry")
        )
    elif runner is None:
        runner = SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_modules("opentelemetry")
        )
    interceptors = [*options.get("interceptors", []), *worker_interceptors(already)]
    return {
        **options,
        "interceptors": interceptors,
        "workflow_runner": ExportingRunner(runner, export_now),
    }


# -- workflow side ---------------------------------------------------------------------------


def _ends_the_span(error: BaseException | None) -> bool:
    """Whether a block that raised `error` ended for good: a failure or cancellation of the
    run, a continue-as-new. Any other exception fails the workflow *task*, which Temporal
    retries from history: the span is left open and the retry ends it (with the same id)."""
    if error is None or isinstance(error, asyncio.CancelledError | workflow.ContinueAsNewError):
        return True
    return isinstance(error, Exception) and workflow.is_failure_exception(error)


@contextmanager
def workflow_span(
    name: str, attributes: Mapping[str, AttributeValue], agent: str | None = None
) -> Iterator[Span]:
    """A span over a block of workflow code, current inside it (activities scheduled there are
    its children). Started with the deterministic ids of contrib's replay-safe provider and
    ended only live (`_ReplaySafeSpan.end` skips it while history replays or the run is being
    evicted), so each is exported once. `agent`: put in the baggage, for the activities."""
    span = trace.get_tracer(INSTRUMENTATION).start_span(name, attributes=dict(attributes))
    context = trace.set_span_in_context(span)
    if agent is not None:
        context = baggage.set_baggage(AGENT_BAGGAGE, agent, context)
    token = opentelemetry.context.attach(context)
    error: BaseException | None = None
    try:
        yield span
    except BaseException as raised:
        error = raised
        raise
    finally:
        _detach(token)
        if _ends_the_span(error):
            if error is not None and not isinstance(error, workflow.ContinueAsNewError):
                span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
            span.end()


def _detach(token: Any) -> None:
    """Detach where the attach happened (an evicted run's block can finish elsewhere)."""
    with suppress(ValueError):
        token.var.reset(token)


def name_the_run(agent: str | None, version: str | None, model: str | None) -> None:
    """Workflow code: the run's span (current) gets its agent's name, version and model, and
    the context the rest of the run schedules its calls in carries the name (baggage)."""
    span = trace.get_current_span()
    if model is not None:
        span.set_attribute(gen_ai.GEN_AI_REQUEST_MODEL, model)
    if agent is None:
        return
    span.set_attribute(gen_ai.GEN_AI_AGENT_NAME, agent)
    span.update_name(f"invoke_agent {agent}")
    if version is not None:
        span.set_attribute(gen_ai.GEN_AI_AGENT_VERSION, version)
    opentelemetry.context.attach(baggage.set_baggage(AGENT_BAGGAGE, agent))  # the run's rest


def record_approval(agent: str, tool: str, outcome: str, waited_seconds: float) -> None:
    """The approval metrics of one decision (workflow code; dropped while replaying)."""
    if _sinks is None:
        return
    attributes = {gen_ai.GEN_AI_AGENT_NAME: agent, gen_ai.GEN_AI_TOOL_NAME: tool,
                  "durable_agents.approval.decision": outcome}  # fmt: skip
    _sinks.instruments.approval_wait.record(waited_seconds, attributes)
    _sinks.instruments.approvals.add(1, attributes)


def record_cost(agent: str, model: str, cost_usd: float) -> None:
    """A priced model call's cost (workflow code, where the run's price table is)."""
    if _sinks is None:
        return
    _sinks.instruments.cost.add(
        cost_usd, {gen_ai.GEN_AI_AGENT_NAME: agent, gen_ai.GEN_AI_REQUEST_MODEL: model}
    )


class AgentTelemetryInterceptor(Interceptor):
    """Spans and metrics of runs (workflow side) and of model and tool calls (activity side).
    Goes after contrib's `OpenTelemetryInterceptor`, which attaches the caller's context."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _CallSpans(next)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _RunSpan


class _RunSpan(WorkflowInboundInterceptor):
    """The run's span, around the whole workflow; the hooks of `telemetry_workflow` on."""

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        info = workflow.info()
        if info.workflow_type not in AGENT_WORKFLOWS:  # an application's own, on the worker
            return await super().execute_workflow(input)
        agent = telemetry_workflow.default_agent_name()
        attributes = {
            gen_ai.GEN_AI_OPERATION_NAME: "invoke_agent",
            gen_ai.GEN_AI_AGENT_NAME: agent,
            gen_ai.GEN_AI_CONVERSATION_ID: info.workflow_id,
            WORKFLOW_ID: info.workflow_id,
            RUN_ID: info.run_id,
            "temporal.workflow.type": info.workflow_type,
        }
        telemetry_workflow.turn_on()
        with workflow_span(f"invoke_agent {info.workflow_type}", attributes, agent):
            return await super().execute_workflow(input)


# -- activity side ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    """What an activity is, for its span: a model call or a tool call."""

    name: str
    attributes: dict[str, AttributeValue]
    kind: str  # "chat" or "execute_tool"
    arguments: dict[str, Any] | None = None


def _call_of(input: ExecuteActivityInput) -> _Call | None:
    """The model or tool call an activity runs (None: another activity, no span)."""
    info = activity.info()
    args = input.args
    if len(args) == 1 and isinstance(args[0], ModelRequest):
        request = args[0]
        attributes: dict[str, AttributeValue] = {
            gen_ai.GEN_AI_OPERATION_NAME: "chat",
            "durable_agents.model.purpose": request.purpose,
            "durable_agents.turn": request.turn,
        }
        if request.model:
            attributes[gen_ai.GEN_AI_REQUEST_MODEL] = request.model
        return _Call(f"chat {request.model or ''}".strip(), attributes, "chat")
    if len(args) == 1 and isinstance(args[0], ToolInvocation):
        return _tool_call(info.activity_type, args[0].call_id, args[0].args, "function")
    if len(args) == 1 and isinstance(args[0], Sequence) and "__" in info.activity_type:
        raw = list(args[0])
        if len(raw) == 1 and isinstance(raw[0], RawValue):  # an MCP call (dynamic activity)
            try:
                mcp = activity.payload_converter().from_payload(raw[0].payload, McpCallRequest)
            except Exception:  # the activity itself refuses it, naming the problem
                return None
            return _tool_call(info.activity_type, mcp.call_id, mcp.args, "extension")
    return None


def _tool_call(tool: str, call_id: str, arguments: dict[str, Any], kind: str) -> _Call:
    attributes: dict[str, AttributeValue] = {
        gen_ai.GEN_AI_OPERATION_NAME: "execute_tool",
        gen_ai.GEN_AI_TOOL_NAME: tool,
        gen_ai.GEN_AI_TOOL_CALL_ID: call_id,
        gen_ai.GEN_AI_TOOL_TYPE: kind,
    }
    return _Call(f"execute_tool {tool}", attributes, "execute_tool", arguments)


def _reply_attributes(reply: ModelReply) -> dict[str, AttributeValue]:
    usage = reply.usage
    attributes: dict[str, AttributeValue] = {
        gen_ai.GEN_AI_RESPONSE_MODEL: reply.model,
        gen_ai.GEN_AI_USAGE_INPUT_TOKENS: usage.prompt_tokens,
        gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS: usage.completion_tokens,
        gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: usage.cached_prompt_tokens,
        "durable_agents.model.tool_calls": len(reply.tool_calls),
    }
    if reply.finish_reason:
        attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] = [reply.finish_reason]
    if usage.estimated:
        attributes["durable_agents.usage.estimated"] = True
    if reply.context_cache_miss:
        attributes["durable_agents.context_cache_miss"] = True
    return attributes


class _CallSpans(ActivityInboundInterceptor):
    """One span per attempt of a model or tool call, exported before the attempt reports."""

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        call = _call_of(input)
        sinks = _sinks
        if call is None or sinks is None:
            return await super().execute_activity(input)
        info = activity.info()
        agent = str(baggage.get_baggage(AGENT_BAGGAGE) or "")
        attributes = {
            **call.attributes,
            ATTEMPT: info.attempt,
            ACTIVITY_ID: info.activity_id,
            WORKFLOW_ID: info.workflow_id or "",
            RUN_ID: info.workflow_run_id or "",
            gen_ai.GEN_AI_CONVERSATION_ID: info.workflow_id or "",
        }
        if agent:
            attributes[gen_ai.GEN_AI_AGENT_NAME] = agent
        if sinks.capture_content and call.arguments is not None:
            attributes[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS] = json.dumps(call.arguments)
        started = time.monotonic()
        result: Any = None
        tracer = trace.get_tracer(INSTRUMENTATION)
        try:
            with (
                holding_spans() as held,
                tracer.start_as_current_span(
                    call.name,
                    kind=SpanKind.CLIENT if call.kind == "chat" else SpanKind.INTERNAL,
                    attributes=attributes,
                ) as span,
            ):
                result = await super().execute_activity(input)
                self._describe(span, call, result, sinks.capture_content)
                return result
        finally:
            _record_call(call, attributes, result, time.monotonic() - started, sinks.instruments)
            await asyncio.to_thread(export_now, held)

    @staticmethod
    def _describe(span: Span, call: _Call, result: Any, capture_content: bool) -> None:
        if isinstance(result, ModelReply):
            span.set_attributes(_reply_attributes(result))
            if call.name == "chat" and result.model:  # the request named none: the default
                span.update_name(f"chat {result.model}")
                span.set_attribute(gen_ai.GEN_AI_REQUEST_MODEL, result.model)
        elif isinstance(result, ToolOutput):
            span.set_attribute("durable_agents.tool.output_chars", result.original_chars)
            span.set_attribute("durable_agents.tool.truncated", result.truncated)
            if capture_content:
                span.set_attribute(gen_ai.GEN_AI_TOOL_CALL_RESULT, result.content)
        span.set_attribute("durable_agents.call.outcome", "ok")


def _record_call(
    call: _Call,
    attributes: Mapping[str, AttributeValue],
    result: Any,
    seconds: float,
    instruments: Instruments,
) -> None:
    """The metrics of one attempt of a call (`result` None: it failed)."""
    keys = (gen_ai.GEN_AI_AGENT_NAME, gen_ai.GEN_AI_OPERATION_NAME, gen_ai.GEN_AI_TOOL_NAME)
    labels: dict[str, AttributeValue] = {k: attributes[k] for k in keys if k in attributes}
    labels["durable_agents.call.outcome"] = "error" if result is None else "ok"
    if call.kind == "execute_tool":
        instruments.tool_calls.add(1, labels)
        return
    model = attributes.get(gen_ai.GEN_AI_REQUEST_MODEL)
    if isinstance(result, ModelReply):
        model = model or result.model
        usage = result.usage
        labels[gen_ai.GEN_AI_REQUEST_MODEL] = str(model)
        for kind, tokens in (("input", usage.prompt_tokens), ("output", usage.completion_tokens)):
            instruments.token_usage.record(tokens, {**labels, gen_ai.GEN_AI_TOKEN_TYPE: kind})
        instruments.cached_tokens.add(usage.cached_prompt_tokens, labels)
    labels[gen_ai.GEN_AI_REQUEST_MODEL] = str(model or "")
    instruments.model_calls.add(1, labels)
    instruments.duration.record(seconds, labels)
