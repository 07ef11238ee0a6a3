"""Invalid workflow input fails the run at once, naming the field; it never leaves a workflow
task retrying. Inputs are CLI-shaped JSON, and one case goes through the real `temporal` CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.errors import INVALID_INPUT
from tests.conftest import BIN, AgentHarness


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        ({}, "prompt: Field required"),
        ({"prompt": ""}, "prompt: String should have at least 1 character"),
        ({"prompt": 42}, "prompt: Input should be a valid string"),
        ({"prompt": "x", "max_iterations": 0}, "max_iterations: Input should be greater than"),
        ({"prompt": "x", "max_iterations": "ten"}, "max_iterations: Input should be a valid int"),
        ({"prompt": "x", "tools": ["calculator", "nope"]}, "tools: unknown tool(s) nope"),
        ({"prompt": "x", "tools": "calculator"}, "tools: Input should be a valid list"),
        ({"prompt": "x", "max_iteration": 3}, "max_iteration: Extra inputs are not permitted"),
        ("just a string", "expected a JSON object"),
        (
            {"prompt": "x", "max_total_tokens": 0},
            "max_total_tokens: Input should be greater than 0",
        ),
        (
            {
                "prompt": "x",
                "cost_budget": {
                    "max_usd": -1,
                    "prices": {"*": {"input_per_million": 1, "output_per_million": 1}},
                },
            },
            "cost_budget.max_usd: Input should be greater than 0",
        ),
        ({"prompt": "x", "cost_budget": {"max_usd": 1, "prices": {}}}, "cost_budget.prices:"),
        ({"prompt": "x", "on_max_iterations": "panic"}, "on_max_iterations: Input should be"),
        ({"prompt": "x", "context_strategy": "forget"}, "context_strategy: Input should be"),
        ({"prompt": "x", "approval_timeout_action": "shrug"}, "approval_timeout_action:"),
        ({"prompt": "x", "approval_timeout_seconds": 0}, "approval_timeout_seconds: Input should"),
        ({"prompt": "x", "max_repeated_calls": 1}, "max_repeated_calls: Input should be greater"),
        ({"prompt": "x", "max_context_tokens": 10}, "max_context_tokens: Input should be greater"),
    ],
)
async def test_invalid_input_fails_the_run_naming_the_field(
    agent: AgentHarness, payload: Any, named: str
) -> None:
    handle = await agent.start(payload)
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == INVALID_INPUT
    assert cause.non_retryable
    assert named in cause.message
    events = [e.event_type for e in (await handle.fetch_history()).events]
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in events
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED in events
    assert agent.fake.request_count == 0


async def test_invalid_input_from_the_temporal_cli(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    address = temporal_env.client.service_client.config.target_host
    workflow_id = f"cli-bad-{uuid.uuid4()}"
    cli = [str(BIN / "temporal"), "workflow"]
    # In a thread: the worker under test runs on this event loop.
    started = await asyncio.to_thread(
        subprocess.run,
        [*cli, "start", "--address", address, "--type", "AgentWorkflow",
         "--task-queue", agent.task_queue, "--workflow-id", workflow_id,
         "--input", '{"prompt": "hi", "max_iterations": 0}'],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    result = await asyncio.to_thread(
        subprocess.run,
        [*cli, "result", "--address", address, "--workflow-id", workflow_id, "--output", "json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    outcome = json.loads(result.stdout)
    assert outcome["status"] == "FAILED"
    failure = json.dumps(outcome)
    assert "max_iterations: Input should be greater than or equal to 1" in failure
    assert INVALID_INPUT in failure


def test_outside_tools_may_not_take_a_local_name() -> None:
    from durable_agents.loop.input_validation import outside_tools_problem

    assert outside_tools_problem(["calculator", "researcher"], ["time__now"]) is None
    problem = outside_tools_problem(["calculator", "web__echo"], ["web__echo", "web__x"])
    assert problem == (
        "mcp_servers: MCP tool(s) web__echo would take the name of a local tool or agent profile"
    )
