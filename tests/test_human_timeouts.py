"""Approval and question timeouts are durable timers. On the time-skipping test server a
one-day wait passes at once; what happens then is configurable, and it is never reported as a
person's rejection. Loop logic, so the worker's model is the scripted in-memory one."""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.errors import HUMAN_WAIT_TIMED_OUT
from tests import scripted_model as sm
from tests.conftest import FAKE_MODEL, started_workers

ONE_DAY = 24 * 3600


async def run_in_time_skipping(
    env: WorkflowEnvironment, model: sm.ScriptedChatModel, workspace: Path, payload: Any
) -> AgentResult:
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, env.client, model, workspace)
        result = await env.client.execute_workflow(
            "AgentWorkflow",
            payload,
            id=f"timeout-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
    assert isinstance(result, AgentResult)
    return result


@pytest.fixture
def scripted_model() -> sm.ScriptedChatModel:
    return sm.ScriptedChatModel(default_model=FAKE_MODEL)


@pytest.fixture
def write_then_answer(scripted_model: sm.ScriptedChatModel) -> sm.ScriptedChatModel:
    scripted_model.enqueue(
        sm.tool_calls(sm.call("write_file", {"path": "t.txt", "content": "t"}, id="w1")),
        sm.text("finished"),
    )
    return scripted_model


async def test_timeout_rejects_by_default_and_says_it_timed_out(
    time_skipping_env: WorkflowEnvironment, write_then_answer: sm.ScriptedChatModel, tmp_path: Path
) -> None:
    result = await run_in_time_skipping(
        time_skipping_env,
        write_then_answer,
        tmp_path,
        {"prompt": "w", "tools": ["write_file"], "approval_timeout_seconds": ONE_DAY},
    )
    [step] = result.steps
    assert step.status == "error"
    assert step.observation == (
        "Error: the approval request for write_file timed out after 86400s with no decision; "
        "the call was not run."
    )
    assert "reject" not in step.observation.lower()
    assert step.human is not None
    assert (step.human.outcome, step.human.timeout_action, step.human.by) == (
        "timed_out", "reject", None,
    )  # fmt: skip
    # A day passed in the run's (durable, skipped) time before the call timed out.
    assert (step.human.at - step.started_at).total_seconds() >= ONE_DAY
    assert not (tmp_path / "t.txt").exists()


async def test_timeout_can_approve(
    time_skipping_env: WorkflowEnvironment, write_then_answer: sm.ScriptedChatModel, tmp_path: Path
) -> None:
    result = await run_in_time_skipping(
        time_skipping_env,
        write_then_answer,
        tmp_path,
        {
            "prompt": "w",
            "tools": ["write_file"],
            "approval_timeout_seconds": 3600,
            "approval_timeout_action": "approve",
        },
    )
    [step] = result.steps
    assert (step.status, step.observation) == ("ok", "wrote 1 bytes to t.txt")
    assert step.human is not None and step.human.outcome == "timed_out"
    assert (tmp_path / "t.txt").read_text() == "t"


async def test_timeout_can_fail_the_run(
    time_skipping_env: WorkflowEnvironment, write_then_answer: sm.ScriptedChatModel, tmp_path: Path
) -> None:
    with pytest.raises(WorkflowFailureError) as caught:
        await run_in_time_skipping(
            time_skipping_env,
            write_then_answer,
            tmp_path,
            {
                "prompt": "w",
                "tools": ["write_file"],
                "approval_timeout_seconds": 60,
                "approval_timeout_action": "fail",
            },
        )
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == HUMAN_WAIT_TIMED_OUT
    assert "timed out after 60s" in cause.message


async def test_unanswered_question_times_out(
    time_skipping_env: WorkflowEnvironment, scripted_model: sm.ScriptedChatModel, tmp_path: Path
) -> None:
    scripted_model.enqueue(
        sm.tool_calls(sm.call("ask_user", {"question": "name?"}, id="q1")),
        sm.text("I will go on without it."),
    )
    result = await run_in_time_skipping(
        time_skipping_env,
        scripted_model,
        tmp_path,
        {"prompt": "x", "tools": ["ask_user"], "approval_timeout_seconds": 7 * ONE_DAY},
    )
    [step] = result.steps
    assert step.observation == "Error: no reply from the user within 604800s."
    assert step.human is not None and step.human.outcome == "timed_out"
