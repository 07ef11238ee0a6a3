"""Temporal workflows: deterministic orchestration of the agent loop, no I/O."""
