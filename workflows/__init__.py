"""This repository's application: the agents `make run` serves beside the engine's default
agent. Each is a `durable_agents.Agent`; the engine runs every one of them as the same durable
`AgentWorkflow`, so here an application defines agents, not workflow classes.
"""

from workflows.notes_agent import notes

AGENTS = [notes]
"""The agents `worker.py` serves."""
