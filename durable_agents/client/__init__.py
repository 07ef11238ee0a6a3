"""The typed client of durable agents: `AgentClient` starts runs and sessions and reaches those
that run (`RunHandle`, `SessionHandle`); failures are the typed errors of
`durable_agents.errors`. Every interface (the `agent` CLI, the HTTP API and console, AG-UI, the
MCP and A2A gateways) reaches runs through it. docs/client.md describes it."""

from durable_agents.client.client import AgentClient, ListedRun
from durable_agents.client.outcome import RunOutcome
from durable_agents.client.run_handle import RunHandle, Steered
from durable_agents.client.session_handle import SessionHandle

__all__ = ["AgentClient", "ListedRun", "RunHandle", "RunOutcome", "SessionHandle", "Steered"]
