"""The `assistant_with_memory`: runs started with a `memory_scope` (whose memory: a user id) get
the `remember`, `recall` and `forget` tools; what one run remembers, a later run with the same
scope recalls, and a run with another scope never sees.
"""

from __future__ import annotations

from durable_agents import Agent

assistant: Agent[None] = Agent(
    "assistant_with_memory",
    instructions=(
        "Remember what the user tells you about their preferences with remember; before you "
        "answer a question about them, recall."
    ),
    tools=["remember", "recall", "forget"],  # offered only to runs with a memory_scope
)
