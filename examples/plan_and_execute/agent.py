"""The `bookkeeper` plans before it acts (`mode="plan_and_execute"`): one model call writes a
plan of steps (tool actions whose arguments may use earlier steps' results,
`${steps.<n>.result}`, or goals for a sub-run), the engine runs the steps, and an answer template
over the results replaces a final model call. A failed step or a missed expectation revises the
plan (`max_replans`).
"""

from __future__ import annotations

from durable_agents import Agent

bookkeeper: Agent[None] = Agent(
    "bookkeeper",
    instructions="Plan the calculations the request needs, then answer with their results.",
    tools=["calculator"],  # the worker's built-in calculator
    mode="plan_and_execute",
    max_replans=1,
)
