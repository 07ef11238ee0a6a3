"""What a tool is: a typed async function plus the options Temporal runs it with.

A tool is written as

    class AddArgs(BaseModel):
        a: float
        b: float

    @tool(start_to_close_timeout=timedelta(seconds=5))
    async def add(args: AddArgs) -> str:
        \"\"\"Add two numbers.\"\"\"
        return str(args.a + args.b)

The argument model gives the JSON schema the model sees and validates what it sends; the
docstring is the description. A tool that needs to know where it runs takes a second parameter
`ctx: ToolContext`.

What is retried (seed 003: a tool's own errors are not retried, transport problems are):
- `ToolError`, and any other exception from the tool's own logic, goes back to the model at once
  as an `Error: ...` observation. Retrying a bug or a refusal would only repeat its side effects.
- Transient failures are retried with backoff: `TransientToolError` (raise it, or raise from it,
  to mark a failure as transient), `ConnectionError`, `TimeoutError`, HTTP transport errors,
  and a worker lost mid-call (its heartbeat timeout).
- A tool that passes `retry_policy=RetryPolicy(...)` opts in: every exception except `ToolError`
  is retried per that policy (for tools whose failures are usually transient).
- An attempt that exceeds `start_to_close_timeout` is not retried (seed 001: the agent reads
  `Error: timed out after 30s` at once, not after three slow attempts), unless the tool opts in:
  a tool that gives its own `retry_policy` (an explicit policy wins), or sets
  `retry_on_timeout=True`, is retried per its policy and the agent reads
  `Error: timed out after 30s (3 attempts)`. `retry_on_timeout=False` keeps a tool with its own
  policy from retrying its timeouts.
When retries are used up the failure also becomes an observation (unless `on_error="stop"`).
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Generic, Literal, TypedDict, TypeVar, Unpack, get_type_hints

from pydantic import BaseModel, ConfigDict, Field
from temporalio.common import RetryPolicy

from durable_agents.contracts.approvals import TimeoutAction
from durable_agents.contracts.errors import TOOL_ERROR
from durable_agents.contracts.model_io import ToolSchema
from durable_agents.tools.memory_store import MemoryStore


class ToolError(Exception):
    """An expected tool failure whose message the model should see (not retried)."""


class TransientToolError(Exception):
    """A failure worth retrying (a service briefly unavailable, a rate limit): retried with
    backoff per the tool's retry policy, then reported to the model."""


@dataclass(frozen=True)
class StopRun:
    """Return this from a tool to end the run: `answer` becomes the run's answer
    (stop_reason `stopped_by_tool`)."""

    answer: str


DepsT = TypeVar("DepsT")


class ToolContext(BaseModel, Generic[DepsT]):
    """Where a tool call runs: the worker's workspace folder, its memory store, the call's
    identity and the application's dependencies (`deps`).

    Annotate a tool's context as `ToolContext[Deps]` to type `ctx.deps`: the object the worker
    was given (`DurableAgentsPlugin(..., deps=Deps(...))`), such as a database pool, an HTTP
    client or a tenant's settings. It lives in the worker process only: it never enters
    workflow input, history or results."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    workspace: Path
    workflow_id: str
    call_id: str
    idempotency_key: str
    scope: str | None = None
    """The run's `memory_scope` (always set for a tool with `requires_scope`)."""
    memory: MemoryStore | None = Field(default=None, repr=False, exclude=True)
    """The worker's long-term memory store (`tools.memory_store`), opened at worker start;
    None on a worker built without one."""
    reporter: Callable[[str, float | None], None] | None = Field(
        default=None, repr=False, exclude=True
    )
    """Where `progress` goes (set by the tool's activity; None: nowhere)."""
    large_payloads: bool = False
    """The worker stores large payloads outside history: the raised limits of
    `contracts.payload_limits` apply to what the tool returns."""
    deps: DepsT = Field(default=None, repr=False, exclude=True)  # type: ignore[assignment]
    """The worker's application dependencies (None when the worker was given none)."""

    def progress(self, message: str, fraction: float | None = None) -> None:
        """Report how far the call is: a heartbeat (its details show in the Web UI) and a
        `tool_progress` event on the run's stream, which `status` shows for the running call.
        `fraction` is how much is done, 0 to 1, if known. Reports close together are
        coalesced (the latest wins); it never fails the tool."""
        if self.reporter is not None:
            self.reporter(message, fraction)


TRANSIENT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=3,
)
"""How transient failures are retried unless the tool gives its own `retry_policy`."""


class ToolSettings(TypedDict, total=False):
    """The keyword options of `@tool(...)`; each one left out keeps `ToolOptions`' default."""

    start_to_close_timeout: timedelta
    heartbeat_timeout: timedelta
    retry_policy: RetryPolicy
    retry_on_timeout: bool
    task_queue: str
    on_error: Literal["continue", "stop"]
    requires_approval: bool | Callable[[Any], bool]
    approval_timeout: timedelta
    on_approval_timeout: TimeoutAction
    requires_scope: bool
    local: bool
    precheck: Callable[[Any], str | None]


Precheck = Callable[[Any], str | None]
"""A tool's `precheck`: the validated argument model in, why the call cannot succeed (or None)
out. See `ToolOptions.precheck`."""


@dataclass(frozen=True)
class ToolOptions:
    """How Temporal runs a tool, in Temporal's own types.

    - `start_to_close_timeout`: time limit of one attempt.
    - `heartbeat_timeout`: a worker that dies mid-call is noticed after it (at most half of
      `start_to_close_timeout`: `lost_worker_timeout`); the tool heartbeats four times within
      it (at least every second) so cancellation arrives promptly.
    - `retry_policy`: None retries transient failures only (`TRANSIENT_RETRY`); a policy opts
      every exception but `ToolError` into retries (see the module docstring).
    - `retry_on_timeout`: retry an attempt that exceeds `start_to_close_timeout` (per the retry
      policy). None (the default): retried when the tool gives its own `retry_policy`, else the
      timeout goes to the model at once; True or False decides it (`retries_timeouts`).
    - `task_queue`: run the tool's activity on workers of another queue (say, with a GPU).
    - `on_error`: `continue` turns a failure into an observation; `stop` fails the whole run.
    - `requires_approval`: True, or a predicate on the validated arguments.
    - `approval_timeout` / `on_approval_timeout`: how long a call waits for a person, and then
      what happens (`reject`, `approve`, `fail`); unset: the run's settings.
    - `requires_scope`: the tool keeps data per user (long-term memory): it is offered only to
      runs with a `memory_scope`, which it receives as `ctx.scope`.
    - `local`: run the tool as a Temporal *local activity* in the worker that runs the workflow:
      no round trip through the task queue, and the history holds one `MarkerRecorded` event
      (with the call's summary and result) instead of scheduled / started / completed events.
      Only for cheap, pure, idempotent tools: a local activity is not heartbeated
      (`heartbeat_timeout` does not apply) and runs again if the worker is lost before the
      workflow task that records its marker completes. Refused together with
      `requires_approval` (a call a person must allow may have side effects), `task_queue` (a
      local activity runs on the workflow's own worker, never on another queue) and
      `requires_scope` (a tool that keeps data per user has side effects), so such a tool never
      becomes a local activity silently. A run's approval policy can still make a local tool's
      call wait for a person: that is decided in the workflow, before the call runs.
    - `precheck`: `fn(args) -> str | None`, given the validated argument model; it returns why
      a call with these arguments can never succeed (a path outside the workspace), or None.
      Before a call waits for a person (`requires_approval`, or a run's policy `ask`), the
      workflow runs it: a reason becomes the call's `Error: ...` observation at once, with no
      pending request and no activity. It runs in *workflow code*, on every replay, so it must
      be a pure, deterministic function of the arguments: no I/O (files, network, the
      filesystem's view of a path), no clock, no randomness, no environment variables or
      settings, no state kept between calls. What needs the world (does the file exist, is it
      a symlink) stays in the tool. A precheck that raises is a bug: the workflow logs it and
      asks the person as if there were none. Refused at definition time unless it is a plain
      (not async, not generator) callable taking the arguments as its one parameter.
    """

    start_to_close_timeout: timedelta = timedelta(seconds=30)
    heartbeat_timeout: timedelta = timedelta(seconds=10)
    retry_policy: RetryPolicy | None = None
    retry_on_timeout: bool | None = None
    task_queue: str | None = None
    on_error: Literal["continue", "stop"] = "continue"
    requires_approval: bool | Callable[[Any], bool] = False
    approval_timeout: timedelta | None = None
    on_approval_timeout: TimeoutAction | None = None
    requires_scope: bool = False
    local: bool = False
    precheck: Precheck | None = None

    def __post_init__(self) -> None:
        if self.precheck is not None:
            check_precheck(self.precheck)
        for name in ("start_to_close_timeout", "heartbeat_timeout", "approval_timeout"):
            value = getattr(self, name)
            if value is not None and value <= timedelta(0):
                raise ValueError(f"tool option {name} must be positive, got {value}")
        if self.on_error not in ("continue", "stop"):
            raise ValueError(
                f"tool option on_error must be 'continue' or 'stop', got {self.on_error!r}"
            )
        if self.local:
            clashes = [
                reason
                for reason, present in (
                    ("requires_approval (a call a person must allow may have side effects)",
                     bool(self.requires_approval)),
                    ("task_queue (a local activity runs on the workflow's own worker)",
                     self.task_queue is not None),
                    ("requires_scope (a tool that keeps data per user has side effects)",
                     self.requires_scope),
                )
                if present
            ]  # fmt: skip
            if clashes:
                raise ValueError(
                    "tool option local=True is only for cheap, pure, idempotent tools; it cannot "
                    "be combined with " + "; ".join(clashes)
                )

    @property
    def lost_worker_timeout(self) -> timedelta:
        """The heartbeat timeout the activity is scheduled with: `heartbeat_timeout`, at most
        half of `start_to_close_timeout`. A worker that dies mid-call is noticed (and the call
        retried) only if the heartbeat timeout fires before the attempt's start-to-close
        timeout, which is not retried: at equal values (10 s, `write_file`'s) the start-to-close
        fired first, so an approved write whose worker was killed read `Error: timed out` and
        was never written (docs/fleet.md)."""
        return min(self.heartbeat_timeout, self.start_to_close_timeout / 2)

    @property
    def retries_everything(self) -> bool:
        """The tool opted into retrying every exception but `ToolError`."""
        return self.retry_policy is not None

    @property
    def retries_timeouts(self) -> bool:
        """Whether an attempt past `start_to_close_timeout` is retried: as `retry_on_timeout`
        says, or (unset) when the tool gave its own `retry_policy` (its author chose how it is
        retried; `maximum_attempts=3` means three attempts, slow ones included)."""
        if self.retry_on_timeout is not None:
            return self.retry_on_timeout
        return self.retry_policy is not None

    @property
    def effective_retry_policy(self) -> RetryPolicy:
        """The policy the activity runs with; a `ToolError` is never retried."""
        policy = self.retry_policy or TRANSIENT_RETRY
        never = [*(policy.non_retryable_error_types or []), TOOL_ERROR]
        return RetryPolicy(
            initial_interval=policy.initial_interval,
            backoff_coefficient=policy.backoff_coefficient,
            maximum_interval=policy.maximum_interval,
            maximum_attempts=policy.maximum_attempts,
            non_retryable_error_types=list(dict.fromkeys(never)),
        )


def check_precheck(precheck: object) -> None:
    """Refuse (`TypeError`) a `precheck` that cannot be what `ToolOptions.precheck` says: not
    callable, async or a generator (it runs synchronously in workflow code), or not callable
    with the arguments alone."""
    if not callable(precheck):
        raise TypeError(
            f"tool option precheck must be a function (args) -> str | None, got {precheck!r}"
        )
    if (
        inspect.iscoroutinefunction(precheck)
        or inspect.isasyncgenfunction(precheck)
        or inspect.isgeneratorfunction(precheck)
    ):
        raise TypeError(
            f"tool option precheck {precheck!r} must be a plain function returning str | None: "
            "it runs in workflow code, so it cannot be async or a generator"
        )
    try:
        signature = inspect.signature(precheck)
    except (TypeError, ValueError):
        return  # a builtin without a signature: nothing more to check
    try:
        signature.bind(object())
    except TypeError:
        raise TypeError(
            f"tool option precheck {precheck!r} must take the validated arguments as its one "
            f"parameter; its signature is {signature}"
        ) from None


def _check_precheck_model(tool_name: str, precheck: Precheck, args_model: type[BaseModel]) -> None:
    """Refuse a precheck annotated for another argument model than its tool's."""
    try:
        hints = get_type_hints(precheck)
        first = next(iter(inspect.signature(precheck).parameters.values()))
    except Exception:  # unresolvable annotations or no signature: nothing to compare
        return
    expected = hints.get(first.name)
    if (
        isinstance(expected, type)
        and issubclass(expected, BaseModel)
        and not issubclass(args_model, expected)
    ):
        raise TypeError(
            f"tool {tool_name!r}: precheck takes {expected.__name__}, but the tool's arguments "
            f"are {args_model.__name__}"
        )


ToolFunction = Callable[..., Awaitable[Any]]


@functools.cache
def _parameters_json(args_model: type[BaseModel]) -> str:
    """`args_model`'s JSON Schema without its title, as JSON text (a fresh dict on each load, so
    no caller can change the cached one)."""
    parameters = args_model.model_json_schema()
    parameters.pop("title", None)
    return json.dumps(parameters)


@dataclass(frozen=True)
class Tool:
    """A registered tool: name, description, argument model, function and options."""

    name: str
    description: str
    args_model: type[BaseModel]
    function: ToolFunction
    options: ToolOptions = field(default_factory=ToolOptions)
    wants_context: bool = False
    asks_user: bool = False
    """True for a question to the user (`ask_user`): the workflow waits for a `reply` signal
    instead of scheduling an activity, so the worker registers no activity for it."""

    def schema(self) -> ToolSchema:
        """The definition sent to the model (Chat Completions `function` tool). Workflow code
        asks for it at every run start and session turn (the run's definition), so the JSON
        Schema is built once per arguments model: building it in the workflow sandbox took
        over the deadlock detector's 2 s on a loaded machine."""
        parameters = json.loads(_parameters_json(self.args_model))
        return ToolSchema(name=self.name, description=self.description, parameters=parameters)

    async def invoke(self, args: BaseModel, ctx: ToolContext) -> Any:
        """Call the function with validated arguments (and the context if it asks for it)."""
        if self.wants_context:
            return await self.function(args, ctx)
        return await self.function(args)


def tool(
    *, name: str | None = None, **options: Unpack[ToolSettings]
) -> Callable[[ToolFunction], Tool]:
    """Turn a typed async function into a `Tool` (see the module docstring); the options are
    `ToolOptions`' fields."""
    settings = ToolOptions(**options)

    def wrap(function: ToolFunction) -> Tool:
        return make_tool(function, name=name, options=settings)

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
    if len(params) == 2 and not is_tool_context(hints.get(params[1].name)):
        raise TypeError(f"tool {function.__name__!r}: second parameter must be ToolContext")
    description = inspect.cleandoc(function.__doc__ or "").strip()
    if not description:
        raise TypeError(f"tool {function.__name__!r} needs a docstring: it is the description")
    if options is not None and options.precheck is not None:
        _check_precheck_model(function.__name__, options.precheck, args_model)
    return Tool(
        name=check_tool_name(name or function.__name__),
        description=description,
        args_model=args_model,
        function=function,
        options=options or ToolOptions(),
        wants_context=len(params) == 2,
    )


TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
"""What Chat Completions servers take as a function name (and a Temporal activity type)."""


def check_tool_name(name: str) -> str:
    """`name`, or a `ValueError` saying what a tool name may be."""
    if not TOOL_NAME.match(name):
        raise ValueError(
            f"tool name {name!r} must be 1-64 letters, digits, _ or -, starting with a letter or _"
        )
    return name


def is_tool_context(annotation: object) -> bool:
    """`ToolContext`, or `ToolContext[Deps]` (pydantic makes the parametrised one a subclass)."""
    return isinstance(annotation, type) and issubclass(annotation, ToolContext)


async def _answered_by_a_person(args: BaseModel) -> Any:
    raise RuntimeError("a question tool is answered by a `reply` signal, never run as an activity")


def question_tool(
    *,
    name: str,
    description: str,
    args_model: type[BaseModel],
    timeout: timedelta | None = None,
    on_timeout: TimeoutAction | None = None,
) -> Tool:
    """A tool whose result is a person's reply (see `ask_user`): the workflow waits for it."""
    return Tool(
        name=name,
        description=description,
        args_model=args_model,
        function=_answered_by_a_person,
        options=ToolOptions(approval_timeout=timeout, on_approval_timeout=on_timeout),
        wants_context=False,
        asks_user=True,
    )
