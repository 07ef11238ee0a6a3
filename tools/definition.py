"""What a tool is: a typed async function plus the options Temporal runs it with.

A tool is written as

    class AddArgs(BaseModel):
        a: float
        b: float

    @tool(timeout_seconds=5)
    async def add(args: AddArgs) -> str:
        \"\"\"Add two numbers.\"\"\"
        return str(args.a + args.b)

The argument model gives the JSON schema the model sees and validates what it sends; the
docstring is the description. A tool that needs to know where it runs takes a second parameter
`ctx: ToolContext`. Raising `ToolError` reports an expected failure: its message goes back to the
model at once and the call is not retried. Any other exception is retried per the tool's retry
settings and, when they are used up, also goes back to the model as an error observation
(unless `on_error="stop"`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field

from contracts.approvals import TimeoutAction
from contracts.model_io import ToolSchema


class ToolError(Exception):
    """An expected tool failure whose message the model should see (not retried)."""


@dataclass(frozen=True)
class StopRun:
    """Return this from a tool to end the run: `answer` becomes the run's answer
    (stop_reason `stopped_by_tool`)."""

    answer: str


class ToolContext(BaseModel):
    """Where a tool call runs: the worker's workspace folder and the call's identity."""

    model_config = ConfigDict(frozen=True)

    workspace: Path
    workflow_id: str
    call_id: str
    idempotency_key: str


class ToolRetry(BaseModel):
    """Temporal retry policy for a tool's activity."""

    model_config = ConfigDict(frozen=True)

    max_attempts: int = Field(default=3, ge=1)
    initial_interval_seconds: float = Field(default=1.0, gt=0)
    backoff_coefficient: float = Field(default=2.0, ge=1)
    max_interval_seconds: float = Field(default=30.0, gt=0)


class ToolOptions(BaseModel):
    """How Temporal runs a tool: timeout per attempt, retries, task queue, and what an error does.

    `heartbeat_seconds` is the activity's heartbeat timeout: a worker that dies mid-call is noticed
    after it, and the tool heartbeats four times within it so cancellation arrives promptly.

    `on_error="continue"` (default) turns a failure into an observation for the model;
    `on_error="stop"` fails the whole run.
    """

    model_config = ConfigDict(frozen=True)

    timeout_seconds: float = Field(default=30.0, gt=0)
    heartbeat_seconds: float = Field(default=10.0, gt=0)
    retry: ToolRetry = ToolRetry()
    task_queue: str | None = None
    on_error: Literal["continue", "stop"] = "continue"
    requires_approval: bool | Callable[[Any], bool] = False
    approval_timeout_seconds: float | None = Field(default=None, gt=0)
    on_approval_timeout: TimeoutAction | None = None


ToolFunction = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    """A registered tool: name, description, argument model, function and options."""

    name: str
    description: str
    args_model: type[BaseModel]
    function: ToolFunction
    options: ToolOptions
    wants_context: bool
    asks_user: bool = False
    """True for a question to the user (`ask_user`): the workflow waits for a `reply` signal
    instead of scheduling an activity, so the worker registers no activity for it."""

    def schema(self) -> ToolSchema:
        """The definition sent to the model (Chat Completions `function` tool)."""
        parameters = self.args_model.model_json_schema()
        parameters.pop("title", None)
        return ToolSchema(name=self.name, description=self.description, parameters=parameters)

    async def invoke(self, args: BaseModel, ctx: ToolContext) -> Any:
        """Call the function with validated arguments (and the context if it asks for it)."""
        if self.wants_context:
            return await self.function(args, ctx)
        return await self.function(args)


def tool(
    *,
    name: str | None = None,
    timeout_seconds: float = 30.0,
    heartbeat_seconds: float = 10.0,
    retry: ToolRetry | None = None,
    task_queue: str | None = None,
    on_error: Literal["continue", "stop"] = "continue",
    requires_approval: bool | Callable[[Any], bool] = False,
    approval_timeout_seconds: float | None = None,
    on_approval_timeout: TimeoutAction | None = None,
) -> Callable[[ToolFunction], Tool]:
    """Turn a typed async function into a `Tool` (see the module docstring)."""
    options = ToolOptions(
        timeout_seconds=timeout_seconds,
        heartbeat_seconds=heartbeat_seconds,
        retry=retry or ToolRetry(),
        task_queue=task_queue,
        on_error=on_error,
        requires_approval=requires_approval,
        approval_timeout_seconds=approval_timeout_seconds,
        on_approval_timeout=on_approval_timeout,
    )

    def wrap(function: ToolFunction) -> Tool:
        return make_tool(function, name=name, options=options)

    return wrap


def make_tool(
    function: ToolFunction, *, name: str | None = None, options: ToolOptions | None = None
) -> Tool:
    """Build a `Tool` from a function `async def f(args: Model[, ctx: ToolContext])`."""
    if not inspect.iscoroutinefunction(function):
        raise TypeError(f"tool {function.__name__!r} must be an async function")
    params = list(inspect.signature(function).parameters.values())
    if len(params) not in (1, 2):
        raise TypeError(f"tool {function.__name__!r} takes (args) or (args, ctx)")
    hints = get_type_hints(function)
    args_model = hints.get(params[0].name)
    if not (isinstance(args_model, type) and issubclass(args_model, BaseModel)):
        raise TypeError(f"tool {function.__name__!r}: first parameter must be a pydantic model")
    if len(params) == 2 and hints.get(params[1].name) is not ToolContext:
        raise TypeError(f"tool {function.__name__!r}: second parameter must be ToolContext")
    description = inspect.cleandoc(function.__doc__ or "").strip()
    if not description:
        raise TypeError(f"tool {function.__name__!r} needs a docstring: it is the description")
    return Tool(
        name=name or function.__name__,
        description=description,
        args_model=args_model,
        function=function,
        options=options or ToolOptions(),
        wants_context=len(params) == 2,
    )


async def _answered_by_a_person(args: BaseModel) -> Any:
    raise RuntimeError("a question tool is answered by a `reply` signal, never run as an activity")


def question_tool(
    *,
    name: str,
    description: str,
    args_model: type[BaseModel],
    timeout_seconds: float | None = None,
    on_timeout: TimeoutAction | None = None,
) -> Tool:
    """A tool whose result is a person's reply (see `ask_user`): the workflow waits for it."""
    return Tool(
        name=name,
        description=description,
        args_model=args_model,
        function=_answered_by_a_person,
        options=ToolOptions(
            approval_timeout_seconds=timeout_seconds, on_approval_timeout=on_timeout
        ),
        wants_context=False,
        asks_user=True,
    )
