"""Replay compatibility: committed histories of representative runs must replay against the
current workflow code. A change that would break runs already in flight fails here; see the
README ("Changing workflow code") for `workflow.patched` and for re-recording."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from tests.histories.record import WORKFLOW_ID, WORKFLOW_IDS
from workflows.agent_workflow import AgentWorkflow
from workflows.session_workflow import SessionWorkflow

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))
EXPECTED = {
    "approval", "approval_timeout", "cancellation", "continue_as_new", "local_tools",
    "mcp_tool", "parallel_tools", "plan_and_execute", "plan_and_execute_step", "session",
    "session_inline", "simple", "sub_agent", "sub_agent_child",
}  # fmt: skip
"""Each scenario of tests/histories/record.py, and the child runs it records (a sub-agent's,
a plan step's: they replay under their own workflow ids, `WORKFLOW_IDS`)."""


def test_every_scenario_has_a_recorded_history() -> None:
    assert {p.stem for p in HISTORIES} == EXPECTED


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_recorded_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(WORKFLOW_IDS.get(path.stem, WORKFLOW_ID), path.read_text())
    replayer = Replayer(
        workflows=[AgentWorkflow, SessionWorkflow], data_converter=pydantic_data_converter
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
