"""The offline demo model shows composition without a key: a plan-and-execute run whose plan is
approved and then executed step by step, and a research request handed to `researcher`."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.demo_model import DemoChatModel, plan_steps, step_goal
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.approvals import PendingRequest
from testkit.eventually import eventually
from tests.conftest import started_workers
from tests.test_cli_run import AgentCli


def test_plan_steps_are_the_then_parts() -> None:
    assert plan_steps("What is 17 * 25, then add 8 to it") == ["What is 17 * 25", "add 8 to it"]
    assert plan_steps("Tell me the time") == ["Tell me the time"]


def test_a_step_that_works_on_the_previous_result() -> None:
    told = (
        "Overall request: x\n\nResults of the earlier steps:\n1. What is 17 * 25: The answer is "
        "425.\n\nYour step (2 of 2): add 8 to it"
    )
    assert step_goal(told) == "What is 425 + 8?"
    assert step_goal("Your step (1 of 1): What is 2 * 3") == "What is 2 * 3"
    assert step_goal("no step here") is None


@pytest.fixture
async def demo_queue(temporal_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[str]:
    async with AsyncExitStack() as stack:
        yield await started_workers(stack, temporal_env.client, DemoChatModel(), tmp_path)


async def test_an_approved_plan_runs_step_by_step(
    temporal_env: WorkflowEnvironment, demo_queue: str
) -> None:
    handle = await temporal_env.client.start_workflow(
        "AgentWorkflow",
        {
            "prompt": "What is 17 * 25, then add 8 to it",
            "mode": "plan_and_execute",
            "plan_approval": True,
        },
        id=f"plan-demo-{uuid.uuid4()}",
        task_queue=demo_queue,
        result_type=AgentResult,
    )
    [plan] = await eventually(
        lambda: handle.query("pending_approvals", result_type=list[PendingRequest]),
        what="the demo plan waiting for approval",
    )
    [first, second] = plan.args["steps"]  # arithmetic: calculator tool actions
    assert (first["tool"], first["args"]) == ("calculator", {"expression": "17 * 25"})
    assert second["args"] == {"expression": "${steps.1.result} + 8"}  # on the first result
    assert plan.args["answer"] == "The answer is ${steps.2.result}."  # filled in: no synthesis
    await handle.signal("approve", {"call_id": plan.call_id, "by": "demo"})
    result = await handle.result()

    assert result.stop_reason == "completed"
    assert result.plan is not None and result.plan.status == ["done", "done"]
    assert [o.answer for o in result.plan.outcomes] == ["425", "433"]
    assert [c.purpose for c in result.model_calls] == ["plan"]  # steps, answer: no calls
    assert result.answer == "The answer is 433."


async def test_a_research_request_is_delegated(
    temporal_env: WorkflowEnvironment, demo_queue: str
) -> None:
    result = await temporal_env.client.execute_workflow(
        "AgentWorkflow",
        {"prompt": "Research what 17 * 25 is", "agents": ["researcher"]},
        id=f"delegate-demo-{uuid.uuid4()}",
        task_queue=demo_queue,
        result_type=AgentResult,
    )
    [step] = result.steps
    assert step.tool == "researcher" and step.child_workflow_id is not None
    assert step.observation == "The answer is 425."
    assert "425" in result.answer


async def test_agent_run_shows_the_plan_as_a_live_checklist(
    temporal_env: WorkflowEnvironment, demo_queue: str
) -> None:
    cli = AgentCli(temporal_env.client.service_client.config.target_host, demo_queue)
    done = await cli(
        "run",
        "What is 17 * 25, then add 8 to it",
        "--input-json",
        '{"mode": "plan_and_execute", "plan_approval": true}',
        "--by",
        "alice",
        stdin="y\n",
        timeout=60,
    )

    assert done.code == 0, done
    out = done.out
    first, second = 'calculator {"expression": "17 * 25"}', "${steps.1.result} + 8"
    assert f"plan:\n  · 1. {first}\n  · 2. calculator {{" in out and second in out
    assert "→ approved plan-1 by alice" in out
    # (the steps' running states are polled, so a fast demo step may pass between two polls)
    assert f"  ✓ 1. {first}\n  ✓ 2. calculator {{" in out
    assert out.index(f"· 1. {first}") < out.index("approved plan-1")
    assert out.index("approved plan-1") < out.index(f"✓ 1. {first}")
    assert out.rstrip().endswith("The answer is 433.")
