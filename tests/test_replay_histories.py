"""Replay compatibility: committed histories of representative runs must replay against the
current workflow code. A change that would break runs already in flight fails here; see the
README ("Changing workflow code") for `workflow.patched` and for re-recording."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from durable_agents.runtime.workers import build_replayer
from tests.catalog import TEST_CATALOG
from tests.histories.record import WORKFLOW_ID, WORKFLOW_IDS

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))
EXPECTED = {
    "approval", "approval_timeout", "cancellation", "continue_as_new", "local_tools",
    "mcp_tool", "parallel_tools", "plan_and_execute", "plan_and_execute_step", "session",
    "session_inline", "simple", "streamed", "sub_agent", "sub_agent_child", "search_attributes",
}  # fmt: skip
"""Each scenario of tests/histories/record.py, and the child runs it records (a sub-agent's,
a plan step's: they replay under their own workflow ids, `WORKFLOW_IDS`)."""


def test_every_scenario_has_a_recorded_history() -> None:
    assert {p.stem for p in HISTORIES} == EXPECTED


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_recorded_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(WORKFLOW_IDS.get(path.stem, WORKFLOW_ID), path.read_text())
    replayer = build_replayer(TEST_CATALOG)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"


BEFORE_HARDENING = sorted((Path(__file__).parent / "histories" / "before_hardening").glob("*.json"))
"""Runs recorded by the code before bad input was hardened (issue 18), each with input the new
code refuses or reads differently: a start with lax types (`"max_iterations": 5.0`,
`"plan_approval": 0`), a session's `cancel_turn` with a reason, a session's `end` whose input
does not parse. They replay as they ran (the strict reading is behind `workflow.patched`)."""


def test_the_runs_recorded_before_hardening_are_there() -> None:
    assert {p.stem for p in BEFORE_HARDENING} == {
        "lax_input", "session_cancel_reason", "session_child_end_bad",
    }  # fmt: skip


@pytest.mark.parametrize("path", BEFORE_HARDENING, ids=[p.stem for p in BEFORE_HARDENING])
async def test_a_run_recorded_before_hardening_replays(path: Path) -> None:
    history = WorkflowHistory.from_json("rec", path.read_text())
    result = await build_replayer(TEST_CATALOG).replay_workflow(
        history, raise_on_replay_failure=False
    )
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
