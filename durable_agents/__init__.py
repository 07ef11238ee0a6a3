"""Durable agents: tool-calling LLM agents that run as deterministic Temporal workflows.

Every model call and tool call is an activity (in history, retried, bounded by timeouts,
cancellable); tools that need a person wait on signals for as long as it takes; history is the
only state store.
"""
