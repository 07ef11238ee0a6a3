"""Telemetry hooks for workflow code: the spans of turns and of waits for a person, and the
metrics only the workflow knows (a priced call's cost, an approval's wait and outcome).

Each hook does nothing, and imports nothing of OpenTelemetry, unless the worker's telemetry
interceptor (`runtime.telemetry.AgentTelemetryInterceptor`) runs this workflow and turned the
hooks on for it (`turn_on`). They issue no Temporal command either way, so histories replay
the same with telemetry on or off. Replay safety is `runtime.telemetry.workflow_span`'s: ids
from the workflow's deterministic random, spans ended only by live code; the metrics go
through contrib's `ReplaySafeMeterProvider`, which drops what replayed code records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from temporalio import workflow

if TYPE_CHECKING:
    from durable_agents.contracts.approvals import HumanDecision, PendingRequest

_ON: ContextVar[bool] = ContextVar("durable_agents_telemetry", default=False)
_AGENT: ContextVar[str | None] = ContextVar("durable_agents_telemetry_agent", default=None)


def turn_on() -> None:
    """Turn the hooks on for the workflow running in this context (the interceptor does)."""
    _ON.set(True)


def default_agent_name() -> str:
    """The agent a run's telemetry names (`gen_ai.agent.name`): its input's `agent_name` once
    `run_started` read it, else its task queue (which names the deployment that serves it)."""
    return _AGENT.get() or workflow.info().task_queue


def run_started(agent_name: str | None, agent_version: str | None, model: str | None) -> None:
    """Name the run's agent (and the model it asks for) on its span, and hand the name to the
    model and tool calls it makes from now on (their spans and metrics)."""
    if not _ON.get() or (agent_name is None and model is None):
        return
    if agent_name is not None:
        _AGENT.set(agent_name)
    with workflow.unsafe.imports_passed_through():
        from durable_agents.runtime import telemetry
    telemetry.name_the_run(agent_name, agent_version, model)


@contextmanager
def turn_span(turn: int) -> Iterator[None]:
    """A span over one turn of the loop (a model call and its round of tools)."""
    if not _ON.get():
        yield
        return
    with workflow.unsafe.imports_passed_through():
        from durable_agents.runtime import telemetry
    with telemetry.workflow_span(f"turn {turn}", {"durable_agents.turn": turn}):
        yield


def _no_decision(decision: HumanDecision) -> None:
    return None


@contextmanager
def approval_span(request: PendingRequest) -> Iterator[Callable[[HumanDecision], None]]:
    """A span over a wait for a person; the block calls what it yields with the decision,
    which the span and the approval metrics record (the wait in workflow time)."""
    if not _ON.get():
        yield _no_decision
        return
    with workflow.unsafe.imports_passed_through():
        from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

        from durable_agents.runtime import telemetry
    attributes = {
        gen_ai.GEN_AI_TOOL_NAME: request.tool,
        gen_ai.GEN_AI_TOOL_CALL_ID: request.call_id,
        "durable_agents.approval.kind": str(request.kind),
    }
    with telemetry.workflow_span(f"{request.kind} {request.tool}", attributes) as span:

        def decided(decision: HumanDecision) -> None:
            span.set_attribute("durable_agents.approval.decision", decision.outcome)
            if decision.by:
                span.set_attribute("durable_agents.approval.approver", decision.by)
            if decision.maker is not None:
                span.set_attribute(
                    "durable_agents.approval.self_declared", decision.maker.self_declared
                )
            waited = max((decision.at - request.requested_at).total_seconds(), 0.0)
            telemetry.record_approval(default_agent_name(), request.tool, decision.outcome, waited)

        yield decided


def model_priced(model: str, cost_usd: float | None) -> None:
    """Count a model call's cost, when the run's price table priced it."""
    if cost_usd is None or not _ON.get():
        return
    with workflow.unsafe.imports_passed_through():
        from durable_agents.runtime import telemetry
    telemetry.record_cost(default_agent_name(), model, cost_usd)
