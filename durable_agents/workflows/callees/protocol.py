"""`Callee`: one thing a model's tool call can reach, and what a call of it needs and returns.

Each callee says what the model is told (`schema`), how its arguments are checked
(`args_schema`), how Temporal runs it (`options`, in Temporal's own types), whether a person
must be asked first (`definition` for the approval rules, `asks_user` for a question), and runs
one call (`invoke`). A call's state lives in its `CallContext` and its `CallResult`, never on
the callee, so calls of one round run concurrently without sharing anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agent_input import AgentInput
    from durable_agents.contracts.agent_result import StepStatus
    from durable_agents.contracts.messages import ToolCall
    from durable_agents.contracts.model_io import ToolSchema
    from durable_agents.contracts.scratchpad import Scratchpad
    from durable_agents.loop.kept_outputs import KeptOutput
    from durable_agents.loop.tool_requests import ArgsSchema
    from durable_agents.tools.definition import Tool, ToolOptions
    from durable_agents.workflows.session_link import run_scope

if TYPE_CHECKING:
    from durable_agents.workflows.delegation import ChildRequests, Delegated


@dataclass(frozen=True)
class CallContext:
    """One call, as the round runs it: the run's settings, the scratchpad the round started
    from (what is left of its budgets), the call and its validated arguments."""

    params: AgentInput
    pad: Scratchpad
    call: ToolCall
    args: dict[str, Any]
    iteration: int
    children: ChildRequests

    @property
    def idempotency_key(self) -> str:
        """`<run scope>/<turn>/<call id>`: stable across retries of the call."""
        return f"{run_scope(self.params)}/{self.iteration}/{self.call.id}"


@dataclass(frozen=True)
class CallResult:
    """What one call came to: the observation the model reads, its step status, whether the
    callee asked to end the run, and the child run it was (a sub-agent's spending counts)."""

    observation: str
    status: StepStatus
    stop_run: bool = False
    delegated: Delegated | None = None
    truncated: bool = False
    kept: KeptOutput | None = None
    """The worker that ran the call keeps its output for the next model call (a delta names it
    instead of carrying it: `loop.kept_outputs`)."""


class Callee(Protocol):
    """Anything a tool call can reach (see the module docstring)."""

    @property
    def name(self) -> str: ...

    @property
    def options(self) -> ToolOptions: ...

    @property
    def args_schema(self) -> ArgsSchema: ...

    @property
    def definition(self) -> Tool | None:
        """The worker's own tool definition (approval rules, precheck), or None."""
        ...

    @property
    def asks_user(self) -> bool: ...

    def schema(self) -> ToolSchema: ...

    async def invoke(self, context: CallContext) -> CallResult: ...


class PlainCallee:
    """The defaults of a callee that is not one of the worker's own tools: Temporal's default
    options, no tool definition (only the run's approval policy may ask) and no question to the
    user. A class overrides what differs."""

    @property
    def options(self) -> ToolOptions:
        return ToolOptions()

    @property
    def definition(self) -> Tool | None:
        return None  # no approval setting of its own: only the run's policy may ask

    @property
    def asks_user(self) -> bool:
        return False
