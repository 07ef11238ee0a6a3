"""The `caterer`: it may ask the person (`ask_user`, a built-in tool of the worker's catalog) when
what it needs is missing. The question waits durably in the run, for hours or days, through
worker restarts; the reply is the tool's observation.
"""

from __future__ import annotations

from durable_agents import Agent

caterer: Agent[None] = Agent(
    "caterer",
    instructions=(
        "You plan food orders. A pizza feeds two people. When you do not know how many people "
        "there are, ask the user with ask_user; never guess."
    ),
    tools=["ask_user"],  # a built-in tool of the worker's catalog, besides the agent's own
)
