"""A run without a memory_scope has no memory tools: asking for them is refused at start, and a
model that calls one anyway reads why (not a bare "unknown tool"). Real worker and server."""

from __future__ import annotations

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.errors import INVALID_INPUT
from tests.conftest import ScriptedHarness
from tests.scripted_model import call, text, tool_calls


async def test_asking_for_memory_tools_without_a_scope_is_refused(
    scripted_agent: ScriptedHarness,
) -> None:
    handle = await scripted_agent.start({"prompt": "x", "tools": ["calculator", "remember"]})
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == INVALID_INPUT
    assert "tools: remember keep data per user and need memory_scope" in cause.message
    assert scripted_agent.model.request_count == 0


async def test_a_memory_tool_called_without_a_scope_is_explained(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        tool_calls(call("recall", {"query": "birthday"}, id="r")), text("I cannot remember.")
    )
    result, _ = await scripted_agent.run({"prompt": "When is my birthday?"})

    offered = [t.name for t in scripted_agent.model.requests[0].tools]
    assert not {"remember", "recall", "forget"} & set(offered)
    [step] = result.steps
    assert step.status == "error"
    assert step.observation.startswith(
        "Error: recall is only available to runs with a memory_scope; this run has none"
    )
