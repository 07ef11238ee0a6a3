"""The offline demo model goes through the same `call_model` activity and produces the same
history shape as a real model."""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.demo_model import DemoChatModel, find_expression
from durable_agents.contracts.agent_result import AgentResult
from tests.conftest import activity_types, local_activities, started_workers
from tests.hitl_support import wait_for_pending


@pytest.mark.parametrize(
    ("prompt", "expression"),
    [
        ("What is 17 * 25?", "17 * 25"),
        ("17 shirts at 25 dollars: 17 x 25", "17 * 25"),
        ("compute (2+3)*4 please", "(2+3)*4"),
        ("what is 6 times 7", "6 * 7"),
        ("hello there", None),
        ("I have 3 cats", None),
    ],
)
def test_demo_model_finds_arithmetic(prompt: str, expression: str | None) -> None:
    found = find_expression(prompt)
    assert (found.replace(" ", "") if found else None) == (
        expression.replace(" ", "") if expression else None
    )


@pytest.mark.parametrize(
    ("prompt", "tools", "answer_starts", "local"),
    [
        ("What is 17 * 25?", ["calculator"], "The answer is 425.", ["calculator"]),
        ("What time is it?", ["current_time"], "It is now 20", []),
        ("Tell me a joke", [], "(offline demo model)", []),
    ],
)
async def test_demo_model_runs_the_whole_flow(
    temporal_env: WorkflowEnvironment,
    tmp_path: Path,
    prompt: str,
    tools: list[str],
    answer_starts: str,
    local: list[str],
) -> None:
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, temporal_env.client, DemoChatModel(), tmp_path)
        handle = await temporal_env.client.start_workflow(
            "AgentWorkflow",
            {"prompt": prompt},
            id=f"demo-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
        result = await handle.result()
    assert result.answer.startswith(answer_starts)
    assert result.model == "demo-offline"
    assert [s.tool for s in result.steps] == tools
    assert result.usage.total_tokens > 0
    activities = [t for t in tools if t not in local]  # the rest ran as local activities
    expected = ["call_model", *activities, "call_model"] if tools else ["call_model"]
    assert await activity_types(handle) == expected
    assert [name for name, _ in await local_activities(handle)] == local


async def test_demo_model_shows_the_approval_flow(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, temporal_env.client, DemoChatModel(), tmp_path)
        handle = await temporal_env.client.start_workflow(
            "AgentWorkflow",
            {"prompt": "Write 'hello world' to notes.txt"},
            id=f"demo-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
        [pending] = await wait_for_pending(handle)
        assert pending.args == {"path": "notes.txt", "content": "hello world", "overwrite": True}
        await handle.signal("approve", {"call_id": pending.call_id, "by": "newcomer"})
        result = await handle.result()
    assert result.answer == "Done: I wrote 11 bytes to notes.txt."
    assert (tmp_path / "notes.txt").read_text() == "hello world"
