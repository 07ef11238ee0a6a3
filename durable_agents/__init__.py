"""Durable agents: tool-calling LLM agents that run as deterministic Temporal workflows.

Every model call and tool call is an activity (in history, retried, bounded by timeouts,
cancellable); tools that need a person wait on signals for as long as it takes; history is the
only state store.

The public API:

- `Agent`, with `@agent.tool` and `ToolContext[Deps]`: an agent defined in code;
- `DurableAgentsPlugin`: the engine on a plain temporalio `Worker`;
- `ToolError`, `TransientToolError`, `StopRun`: what a tool raises or returns;
- `durable_agents.testing`: `TestModel`, `FunctionModel`, `AgentTestEnvironment`.
"""

from durable_agents.agent import Agent
from durable_agents.plugin import DurableAgentsPlugin
from durable_agents.tools.definition import StopRun, ToolContext, ToolError, TransientToolError

__all__ = [
    "Agent",
    "DurableAgentsPlugin",
    "StopRun",
    "ToolContext",
    "ToolError",
    "TransientToolError",
]
