"""Two agents: the `fact_finder` with a tool of its own, and the `editor`, which may hand a
task to the fact finder. Each hand-off is a child `AgentWorkflow` with its own history and Web UI
page, linked from the editor's run; its answer is the observation the editor reads.
"""

from __future__ import annotations

from durable_agents import Agent, ToolError

FACTS = {
    "temporal": "Temporal is a durable execution platform; workflows replay their history.",
    "activity": "An activity is a step with side effects, retried and bounded by timeouts.",
}
"""What the fact finder's tool can look up."""

fact_finder: Agent[None] = Agent(
    "fact_finder",
    instructions="Look facts up with the lookup tool and report them in one sentence.",
    description="Looks facts up and reports them; give it one question as its task.",
)


@fact_finder.tool
async def lookup(topic: str) -> str:
    """A short fact about a topic.

    Args:
        topic: One word, lower case (`temporal`).
    """
    fact = FACTS.get(topic.lower())
    if fact is None:
        raise ToolError(f"nothing on {topic!r}; topics: {', '.join(FACTS)}")
    return fact


editor: Agent[None] = Agent(
    "editor",
    instructions=(
        "You write short explanations. Hand each fact you need to the fact_finder agent, then "
        "write the explanation from what it reports."
    ),
    agents=["fact_finder"],  # the fact finder is offered as a tool taking a `task`
)
