"""The `adder`: a small agent whose runs are followed event by event. Every run publishes a typed
event stream (the models of `durable_agents.contracts.events`): its start, each model call, each
tool call, approvals and questions, the end. The stream is resumable by offset and survives
worker restarts and continue-as-new.
"""

from __future__ import annotations

from durable_agents import Agent

adder: Agent[None] = Agent(
    "adder",
    instructions="Do arithmetic with the calculator tool.",
    tools=["calculator"],  # the worker's built-in calculator
)
