"""An agent defined in code: instructions, a model, its own tools with typed dependencies.

    shop = Agent("shop", instructions="Answer price questions.", model="gpt-4.1-mini",
                 deps_type=Deps)

    @shop.tool
    async def price(ctx: ToolContext[Deps], item: str) -> float:
        \"\"\"The unit price of an item, in dollars.\"\"\"
        return ctx.deps.prices[item]

An `Agent` is a definition, not a process: a worker serves it through `DurableAgentsPlugin`
(its tools become activities named after them, its dependencies stay in the worker), and a
client starts it with `AgentClient.start(shop, prompt)`, which sends `shop.input(prompt)` as
the input of the same `AgentWorkflow` every run uses. So the Temporal CLI and Web UI show these
runs like any other, and every run setting (plan mode, sub-agents, memory, MCP servers, client
tools, code mode, limits) is reachable through `settings`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, Protocol, Unpack, overload

from pydantic import BaseModel, ValidationError
from typing_extensions import TypeVar

from durable_agents.activities.chat_model import ChatModel
from durable_agents.contracts.agent_input import AgentInput
from durable_agents.contracts.agents import AgentProfile
from durable_agents.tools.definition import Tool, ToolFunction, ToolOptions, ToolSettings
from durable_agents.tools.signature import tool_from_signature

DepsT = TypeVar("DepsT", default=None)
F = TypeVar("F", bound=ToolFunction)


class ModelOverride(Protocol):
    """What `Agent.override(model=...)` takes (`durable_agents.testing.TestModel`,
    `FunctionModel`): a model name unique to it, which runs send, and the backend that a
    worker serving the agent answers that name with."""

    @property
    def name(self) -> str: ...

    def chat_model(self) -> ChatModel: ...


class Agent(Generic[DepsT]):
    """A named agent: its instructions (the system prompt), its model, its own tools and the
    run settings it starts with.

    - `name`: how runs, the catalog and other agents name it (letters, digits, `_`, `-`).
    - `model`: a model name as the worker's settings resolve it (None: the worker's default);
      `provider/model` reaches a provider of `MODEL_PROVIDERS`.
    - `deps_type`: the type of `ctx.deps` its tools receive (for type checkers; the worker is
      given the object itself).
    - `tools`: names of tools of the worker's catalog it may use besides its own
      (`calculator`, `ask_user`, an MCP server's `server__tool`).
    - `output_type`: a pydantic model the answer must validate against.
    - `description`: what another agent is told it is for, when it may hand work to this one.
    - `version`: the version in the label of its runs' definition, `name@version`
      (docs/concepts/definitions.md); None: the definition's digest, shortened, stands in.
    - `settings`: any other run setting of `AgentInput` (`max_iterations=5`,
      `mode="plan_and_execute"`, `agents=["researcher"]`, `on_new_definition=
      "migrate_at_turn"`, `model_call="local"` for a fast model whose calls should be local
      activities, ...), checked here, at definition.
    """

    def __init__(
        self,
        name: str,
        *,
        instructions: str,
        model: str | None = None,
        deps_type: type[DepsT] | None = None,
        tools: Sequence[str] = (),
        output_type: type[BaseModel] | None = None,
        description: str | None = None,
        version: str | None = None,
        **settings: Any,
    ) -> None:
        self.name = name
        self.version = version
        self.instructions = instructions
        self.model = model
        self.deps_type = deps_type
        self.output_type = output_type
        self.description = description or instructions
        self._catalog_tools = list(tools)
        self._tools: dict[str, Tool] = {}
        self._override: ModelOverride | None = None
        self._settings = dict(settings)
        self.input("check")  # refuses a bad name, instructions or setting now, not at run time
        self.profile()

    @property
    def tools(self) -> list[Tool]:
        """The tools defined on this agent, in definition order."""
        return list(self._tools.values())

    @property
    def tool_names(self) -> list[str]:
        """Every tool a run of this agent may call: its own, then the catalog's it names."""
        return [*self._tools, *(n for n in self._catalog_tools if n not in self._tools)]

    @property
    def model_name(self) -> str | None:
        """The model its runs name: the override's while one is active, else `model`."""
        return self._override.name if self._override is not None else self.model

    @overload
    def tool(self, function: F, /) -> F: ...

    @overload
    def tool(
        self, /, *, name: str | None = None, **options: Unpack[ToolSettings]
    ) -> Callable[[F], F]: ...

    def tool(
        self, function: F | None = None, /, *, name: str | None = None, **options: Any
    ) -> F | Callable[[F], F]:
        """Add a tool: `@agent.tool` or `@agent.tool(requires_approval=True, ...)`.

        The function is `async def f(ctx: ToolContext[Deps], arg: T, ...)` (the context is
        optional); its schema comes from the other parameters and the docstring
        (`tools.signature`). The options are `ToolOptions`' (timeouts, retry policy, task
        queue, approval, local, precheck). The function itself is returned unchanged, so it
        can still be called directly in a unit test."""
        settings = ToolOptions(**options)

        def add(tool_function: F) -> F:
            made = tool_from_signature(tool_function, name=name, options=settings)
            if made.name in self._tools:
                raise ValueError(f"agent {self.name!r} already has a tool named {made.name!r}")
            self._tools[made.name] = made
            return tool_function

        return add(function) if function is not None else add

    @contextlib.contextmanager
    def override(self, *, model: ModelOverride) -> Iterator[None]:
        """Within the block, runs started from this agent name `model` (a `TestModel` or a
        `FunctionModel` of `durable_agents.testing`), which a worker with a plugin serving this
        agent answers with. For tests; not thread-safe."""
        previous, self._override = self._override, model
        try:
            yield
        finally:
            self._override = previous

    @property
    def model_override(self) -> ModelOverride | None:
        """The active override, if any (`DurableAgentsPlugin` routes its model name)."""
        return self._override

    def input(self, prompt: str, **settings: Any) -> AgentInput:
        """The workflow input of a run of this agent: `settings` override the agent's own.
        Refused with a `ValueError` naming the field when a value is not valid."""
        values: dict[str, Any] = {**self.defined_settings(), **settings, "prompt": prompt}
        try:
            return AgentInput.model_validate(values)
        except ValidationError as error:
            raise ValueError(f"agent {self.name!r}: {error}") from None

    def defined_settings(self) -> dict[str, Any]:
        """The run settings this agent defines (what a run's settings take from it): its
        instructions, tools, model, output type, name, version and its own settings."""
        return {
            "system_prompt": self.instructions,
            "tools": self.tool_names,
            **({"model": self.model_name} if self.model_name is not None else {}),
            **({"output_type": self.output_type.__name__} if self.output_type else {}),
            "agent_name": self.name,
            **({"agent_version": self.version} if self.version is not None else {}),
            **self._settings,
        }

    def profile(self) -> AgentProfile:
        """This agent as a profile other runs may hand work to (`"agents": [name]`)."""
        return AgentProfile(
            name=self.name,
            description=self.description,
            system_prompt=self.instructions,
            tools=self.tool_names,
            model=self.model,
            model_call=self._settings.get("model_call"),
            definition=self.defined_settings(),
        )
