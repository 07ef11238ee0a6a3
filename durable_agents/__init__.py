"""Durable agents: tool-calling LLM agents that run as deterministic Temporal workflows.

Every model call and tool call is an activity (in history, retried, bounded by timeouts,
cancellable); tools that need a person wait on signals for as long as it takes; history is the
only state store.

The public API:

- `Agent`, with `@agent.tool` and `ToolContext[Deps]`: an agent defined in code;
- `DurableAgentsPlugin`: the engine on a plain temporalio `Worker`;
- `AgentClient`: start runs, answer what waits for a person, read results and events;
- `ToolError`, `TransientToolError`, `StopRun`: what a tool raises or returns;
- `durable_agents.testing`: `TestModel`, `FunctionModel`, `AgentTestEnvironment`;
- `durable_agents.errors`: the typed errors of the client.

The names are imported on first use: the workflow sandbox imports this package whenever it
imports a workflow module, and must not import the worker's and client's modules with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from durable_agents.agent import Agent
    from durable_agents.client import AgentClient, RunHandle, SessionHandle
    from durable_agents.plugin import DurableAgentsPlugin
    from durable_agents.tools.definition import (
        StopRun,
        ToolContext,
        ToolError,
        TransientToolError,
    )

_EXPORTS = {
    "Agent": "durable_agents.agent",
    "AgentClient": "durable_agents.client",
    "DurableAgentsPlugin": "durable_agents.plugin",
    "RunHandle": "durable_agents.client",
    "SessionHandle": "durable_agents.client",
    "StopRun": "durable_agents.tools.definition",
    "ToolContext": "durable_agents.tools.definition",
    "ToolError": "durable_agents.tools.definition",
    "TransientToolError": "durable_agents.tools.definition",
}

__all__ = [
    "Agent",
    "AgentClient",
    "DurableAgentsPlugin",
    "RunHandle",
    "SessionHandle",
    "StopRun",
    "ToolContext",
    "ToolError",
    "TransientToolError",
]


def __getattr__(name: str) -> Any:
    """The public names, imported on first use (see the module docstring)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'durable_agents' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
