"""The editor hands a task to the fact finder, tested with `AgentTestEnvironment` and a
`FunctionModel` that answers as each agent (it reads the system prompt to know which)."""

from __future__ import annotations

import pytest

from durable_agents.testing import AgentTestEnvironment, FunctionModel, ModelCall, call, text
from durable_agents.testing.models import Completion
from examples.sub_agent.agents import editor, fact_finder
from examples.sub_agent.ask import ask


def as_each_agent(request: ModelCall) -> Completion:
    """The fact finder looks `activity` up and reports it; the editor delegates, then writes."""
    system = request.messages[0]["content"]
    last = request.messages[-1]
    if system == fact_finder.instructions:
        if last.get("role") == "tool":
            return text(f"Reported: {last['content']}")
        return call("lookup", topic="activity")
    if last.get("role") == "tool":
        return text(f"In short: {last['content']}")
    return call("fact_finder", task="What is a Temporal activity?")


async def test_the_editor_writes_from_what_its_fact_finder_child_run_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with AgentTestEnvironment.start([editor, fact_finder]) as env:
        with editor.override(model=FunctionModel(as_each_agent)):
            answer = await ask(env.agents, "Explain activities", task_queue=env.task_queue)
    assert answer == (
        "In short: Reported: An activity is a step with side effects, retried and bounded by "
        "timeouts."
    )
    child = capsys.readouterr().out
    assert " fact_finder ran as editor-" in child and "/fact_finder-" in child
