"""`DurableAgentsPlugin`: the engine on an application's own Temporal `Worker`.

    worker = Worker(client, task_queue="shop",
                    plugins=[DurableAgentsPlugin([shop], deps=Deps(prices))])

The plugin adds what `runtime.workers.build_workers` gives the ready-made worker: the
`AgentWorkflow` and `SessionWorkflow`, the model call, every tool of the catalog and of the
agents as an activity named after it, the interceptors, the sandbox that passes the engine's
modules through, and the pydantic payload converter (on the worker's client; pass the plugin to
`Client.connect(plugins=[...])` too, or use `AgentClient`, which sets it, for the client side).
The queues beside the worker's own (its cache-affinity queue, a tool's `task_queue`) get
workers of their own, run and stopped with it. Agents defined in code run beside the default
agent and the catalog's profiles.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio.client import ClientConfig
from temporalio.plugin import SimplePlugin
from temporalio.worker import Worker, WorkerConfig

from durable_agents.activities.chat_model import ChatModel
from durable_agents.agent import Agent
from durable_agents.contracts.model_io import ModelReply, ModelRequest
from durable_agents.contracts.policy import WorkerPolicy
from durable_agents.runtime.inbound_payloads import worker_client
from durable_agents.runtime.temporal_client import engine_client, with_pydantic_payloads
from durable_agents.runtime.workers import EngineWorkers, WorkerTuning, engine_workers
from durable_agents.tools.catalog import CATALOG, Catalog
from durable_agents.tools.memory_store import MemoryStore

if TYPE_CHECKING:
    from durable_agents.activities.mcp_servers import McpServers
    from durable_agents.runtime.settings import EnvironmentSettings


def with_agents(catalog: Catalog, agents: Sequence[Agent[Any]]) -> Catalog:
    """`catalog` plus each agent's tools, output type and profile. Two agents' tools of one
    name are refused (`ValueError` naming both): a worker runs one activity per tool name."""
    owners: dict[str, str] = {}
    for agent in agents:
        for tool in agent.tools:
            if tool.name in owners:
                raise ValueError(
                    f"agents {owners[tool.name]!r} and {agent.name!r} both define a tool named "
                    f"{tool.name!r}; one worker runs one activity per tool name"
                )
            owners[tool.name] = agent.name
    outputs = {agent.output_type for agent in agents if agent.output_type is not None}
    return catalog.extended(
        tools=[tool for agent in agents for tool in agent.tools],
        output_types=sorted(outputs, key=lambda model: model.__name__),
        agents=[agent.profile() for agent in agents],
    )


class AgentModels:
    """The worker's model, except for the model names of agents' active overrides (a
    `TestModel` in a test), which their own backends answer."""

    def __init__(self, default: ChatModel, agents: Sequence[Agent[Any]]) -> None:
        self._default = default
        self._agents = list(agents)
        self.default_model = default.default_model

    async def complete(self, request: ModelRequest) -> ModelReply:
        for agent in self._agents:
            override = agent.model_override
            if override is not None and request.model == override.name:
                return await override.chat_model().complete(request)
        return await self._default.complete(request)

    async def close(self) -> None:
        close = getattr(self._default, "close", None)
        if close is not None:
            await close()


class DurableAgentsPlugin(SimplePlugin):
    """Runs the engine and `agents` on the `Worker` it is given (see the module docstring).

    - `deps`: the object every tool receives as `ctx.deps` (worker-side only: never in
      workflow input, history or results).
    - `model`: the model backend (`activities.chat_model.ChatModel`); None: as the worker's
      environment says (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `MODEL`, `MODEL_PROVIDERS`; the
      offline demo model without a key), as `worker.py` does.
    - `catalog`: the tools, output types and profiles besides the agents' (default: the
      engine's built-in ones).
    - `workspace`: the folder the file tools are confined to (default: `AGENT_WORKSPACE`).
    - `memory`: the long-term memory store, opened and closed by the caller (None: the memory
      tools answer that memory is not set up).
    - `mcp`: MCP servers whose tools runs may call (`activities.mcp_servers.McpServers`,
      opened and closed by the caller, as for `build_workers`).
    - `tuning`, `policy`: as for `build_workers`.
    """

    def __init__(
        self,
        agents: Sequence[Agent[Any]] = (),
        *,
        deps: Any = None,
        model: ChatModel | None = None,
        catalog: Catalog = CATALOG,
        workspace: Path | None = None,
        memory: MemoryStore | None = None,
        tuning: WorkerTuning | None = None,
        policy: WorkerPolicy | None = None,
        mcp: McpServers | None = None,
    ) -> None:
        super().__init__("durable_agents.DurableAgentsPlugin")
        self.agents = list(agents)
        self.catalog = with_agents(catalog, self.agents)
        self._deps = deps
        self._model = model
        self._workspace = workspace
        self._memory = memory
        self._tuning = tuning
        self._policy = policy
        self._mcp = mcp
        self._beside: dict[str, EngineWorkers] = {}

    def configure_client(self, config: ClientConfig) -> ClientConfig:
        """A client given the plugin speaks the engine's payloads."""
        config["data_converter"] = with_pydantic_payloads(config["data_converter"])
        return super().configure_client(config)

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """Add the engine's workflows, activities, interceptors and worker options."""
        client = config["client"] = worker_client(engine_client(config["client"]))
        engine = engine_workers(
            client,
            task_queue=config["task_queue"],
            model=AgentModels(self._model or self._model_from_environment(), self.agents),
            catalog=self.catalog,
            workspace=self._workspace_folder(),
            memory=self._memory,
            tuning=self._tuning,
            policy=self._policy,
            mcp=self._mcp,
            deps=self._deps,
        )
        self._beside[config["task_queue"]] = engine
        config["workflows"] = [*config.get("workflows", []), *engine.workflows]
        config["activities"] = [*config.get("activities", []), *engine.activities]
        options = dict(engine.options)
        config["interceptors"] = [*config.get("interceptors", []), *options.pop("interceptors")]
        for kept in ("graceful_shutdown_timeout", "deployment_config", "max_cached_workflows",
                     "max_concurrent_workflow_tasks", "max_concurrent_activities",
                     "disable_eager_activity_execution"):  # fmt: skip
            options.pop(kept, None)  # the application's own choice stands
        if config.get("patch_activation_callback") is not None:
            options.pop("patch_activation_callback")
        config.update(options)  # type: ignore[typeddict-item]
        return super().configure_worker(config)

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Run the worker, and beside it the workers of its other queues."""
        engine = self._beside[worker.task_queue]
        client = worker.client
        beside = [
            Worker(client, task_queue=queue, activities=activities, **engine.options)
            for queue, activities in engine.queues.items()
        ]
        running = [asyncio.create_task(other.run()) for other in beside]
        try:
            await super().run_worker(worker, next)
        finally:
            await asyncio.gather(*(other.shutdown() for other in beside), return_exceptions=True)
            await asyncio.gather(*running, return_exceptions=True)

    def _workspace_folder(self) -> Path:
        if self._workspace is not None:
            return self._workspace.resolve()
        folder = self._environment.workspace
        folder.mkdir(parents=True, exist_ok=True)
        return folder.resolve()

    def _model_from_environment(self) -> ChatModel:
        """The model `worker.py` would use, from the same environment variables."""
        from durable_agents.runtime.models import chat_model_for

        return chat_model_for(self._environment)

    @functools.cached_property
    def _environment(self) -> EnvironmentSettings:
        """The worker's environment settings, read once, when a default needs them."""
        from durable_agents.runtime.settings import EnvironmentSettings

        return EnvironmentSettings.from_env()
