"""An evaluated run as a whole: the run `agent eval` started and every child run under it.

A plan-and-execute run makes its goal steps as child runs (`<run id>/step-<n>`), and a call of
an agent profile is a child run too (a sub-agent, which may have its own). Their tool calls,
failures and model calls are the run's: `tools_called`, `recovers`, `max_steps` / `max_turns`
and a scripted person's "cancel after N tool steps" read them all. Each workflow of the tree
is one `RunPart`, what it did by itself (read from its result, or from its `status` query when
it has none, and from its history); `whole_run` sums the parts. Pure functions, no I/O: the
reading is `run_tree.RunTree`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from durable_agents.cli.evaluation.scoring import Failures, NewToolCall, new_tool_calls
from durable_agents.contracts.agent_result import AgentResult, ToolStep
from durable_agents.contracts.agent_status import AgentStatus


class RunPart(BaseModel):
    """What one workflow of an evaluated run did by itself (its child runs are parts of their
    own)."""

    workflow_id: str
    steps: int = Field(default=0, description="Its tool steps (the count, all of them).")
    turns: int = Field(default=0, description="Its model calls.")
    known_steps: list[ToolStep] = Field(
        default=[],
        description="The steps it tells about: all a result keeps, the last few of a status.",
    )
    failed_models: int = Field(default=0, description="Models given up on for a fallback.")
    activity_failures: int = Field(default=0, description="Failed or timed out activities.")
    activity_retries: int = Field(default=0, description="Activity attempts retried.")


def part_from_result(
    workflow_id: str, result: AgentResult, activity_failures: int = 0, activity_retries: int = 0
) -> RunPart:
    """A workflow that ended with a result (its history's failures given)."""
    return RunPart(
        workflow_id=workflow_id,
        steps=len(result.steps) + result.steps_omitted,
        turns=result.iterations,
        known_steps=result.steps,
        failed_models=sum(len(call.failed_models) for call in result.model_calls),
        activity_failures=activity_failures,
        activity_retries=activity_retries,
    )


def part_from_status(
    workflow_id: str, status: AgentStatus, activity_failures: int = 0, activity_retries: int = 0
) -> RunPart:
    """A workflow without a result (running, cancelled, failed): what its `status` says."""
    return RunPart(
        workflow_id=workflow_id,
        steps=status.steps,
        turns=status.iteration,
        known_steps=status.recent_steps,
        activity_failures=activity_failures,
        activity_retries=activity_retries,
    )


class WholeRun(BaseModel):
    """The sums of a run's parts that the checks and metrics read."""

    steps: int
    turns: int
    tools: list[str] = Field(description="Tools called, in the order the calls started.")
    new_calls: list[NewToolCall]
    failures: Failures


def whole_run(parts: Sequence[RunPart]) -> WholeRun:
    """The run and its child runs as one: steps and model calls summed, the tools of every
    known step in the order they started, every failure."""
    known = sorted((s for p in parts for s in p.known_steps), key=lambda s: s.started_at)
    return WholeRun(
        steps=steps_of(parts),
        turns=sum(p.turns for p in parts),
        tools=[s.tool for s in known],
        new_calls=new_tool_calls(known),
        failures=Failures(
            tool_errors=sum(s.status == "error" for s in known),
            failed_models=sum(p.failed_models for p in parts),
            activity_failures=sum(p.activity_failures for p in parts),
            activity_retries=sum(p.activity_retries for p in parts),
        ),
    )


def steps_of(parts: Sequence[RunPart]) -> int:
    """The tool steps of the whole run: each part's own, as a ReAct run counts its own (what
    a scripted person counts before cancelling)."""
    return sum(p.steps for p in parts)
