"""What this application offers its runs, in one object: `CATALOG` (tools, output types, agent
profiles).

Adding a tool = writing its function (see `tools.definition`) and listing it here (or
registering it into `REGISTRY` from a module named in `AGENT_TOOL_MODULES`); no loop code
changes. The worker is built from a catalog (`runtime.workers.build_workers(catalog=...)`):
it turns each tool into an activity named after it, and hands the same catalog to the
workflows it runs (`workflows.worker_catalog`), which read schemas, argument models, output
types and profiles from it. Tests build their own catalog (`CATALOG.extended(...)`) instead of
registering into this one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from pydantic import BaseModel

from durable_agents.contracts.agents import AgentProfile
from durable_agents.contracts.command_server import CommandServer
from durable_agents.tools.agents import AGENT_PROFILES, AgentProfiles
from durable_agents.tools.builtin.ask_user import ask_user
from durable_agents.tools.builtin.calculator import calculator
from durable_agents.tools.builtin.current_time import current_time
from durable_agents.tools.builtin.files import read_file
from durable_agents.tools.builtin.final_answer import final_answer
from durable_agents.tools.builtin.memory import forget, recall, remember
from durable_agents.tools.builtin.weather import weather
from durable_agents.tools.builtin.write_file import write_file
from durable_agents.tools.definition import Tool
from durable_agents.tools.outputs import OutputTypes
from durable_agents.tools.registry import ToolRegistry

REGISTRY = ToolRegistry(
    [
        calculator,
        current_time,
        read_file,
        write_file,
        ask_user,
        final_answer,
        remember,
        recall,
        forget,
        weather,
    ]
)

OUTPUT_TYPES = OutputTypes()
"""Typed answers a run can ask for by name (`output_type`); register with
`OUTPUT_TYPES.register(Model)`."""


@dataclass(frozen=True)
class Catalog:
    """Everything a run may name: tools, output types (`output_type`), agent profiles
    (`agents`), and two flags that decide new runs only (`runtime.workers.patch_activation`;
    a run keeps the answer in its history, and replay never reads the flags): whether the
    worker's server has the agent search attributes registered (`search_attributes`, see
    `workflows.search_attributes`), and whether the worker stores large payloads outside
    history (`large_payloads`: the raised limits of `contracts.payload_limits` apply).

    `command_server`: the server and namespace the commands its runs hand out to be pasted
    must name (`loop.pasted_commands`); read only where people read them (queries, current
    details), never for what a run records. None: no flags (a `Replayer`)."""

    tools: ToolRegistry
    output_types: OutputTypes
    agents: AgentProfiles
    search_attributes: bool = False
    large_payloads: bool = False
    command_server: CommandServer | None = None

    def extended(
        self,
        tools: Iterable[Tool] = (),
        output_types: Iterable[type[BaseModel]] = (),
        agents: Iterable[AgentProfile] = (),
    ) -> Catalog:
        """A new catalog: this one's entries plus these (this one is left as it is)."""
        outputs = OutputTypes()
        for name, model in self.output_types.as_dict().items():
            outputs.register(model, name)
        for model in output_types:
            outputs.register(model)
        return replace(
            self,
            tools=ToolRegistry([*self.tools.all(), *tools]),
            output_types=outputs,
            agents=AgentProfiles([*self.agents.by_name().values(), *agents]),
        )

    def with_search_attributes(self, enabled: bool = True) -> Catalog:
        """This catalog, its runs keeping the agent search attributes (or not)."""
        return replace(self, search_attributes=enabled)

    def with_large_payloads(self, enabled: bool = True) -> Catalog:
        """This catalog, its worker storing large payloads outside history (or not)."""
        return replace(self, large_payloads=enabled)

    def with_command_server(self, server: CommandServer | None) -> Catalog:
        """This catalog, its runs' pasted commands naming `server` when it is not the default."""
        return replace(self, command_server=server)


CATALOG = Catalog(REGISTRY, OUTPUT_TYPES, AGENT_PROFILES)
"""The application's catalog: what `worker.py` serves."""
