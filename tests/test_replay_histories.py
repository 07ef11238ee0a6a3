"""Replay compatibility: committed histories of representative runs must replay against the
current workflow code. A change that would break runs already in flight fails here; see the
README ("Changing workflow code") and docs/versioning.md for `workflow.patched` and for
re-recording."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from durable_agents.runtime.workers import build_replayer
from tests.catalog import TEST_CATALOG
from tests.histories.record import WORKFLOW_ID, WORKFLOW_IDS

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))
EXPECTED = {
    "approval", "approval_timeout", "cancellation", "continue_as_new", "definitions",
    "definitions_approval", "definitions_once", "local_model",
    "local_tools", "mcp_tool", "parallel_tools", "plan_and_execute", "plan_and_execute_step",
    "session", "session_inline", "simple", "streamed", "sub_agent", "sub_agent_child",
    "search_attributes",
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


def test_a_replay_does_not_hash_every_loaded_module() -> None:
    """`build_replayer` names a build id, so a replay in a fresh process (`agent replay`, these
    tests, bench target 5) skips the SDK's default one: a hash of every loaded module's
    bytecode, about a third of a first replay's CPU, for an id a replay never uses."""
    path = Path(__file__).parent / "histories" / "simple.json"
    script = f"""
import asyncio
from temporalio.client import WorkflowHistory
from temporalio.worker import _worker
from durable_agents.runtime.workers import build_replayer
from tests.catalog import TEST_CATALOG
from tests.histories.record import WORKFLOW_ID
history = WorkflowHistory.from_json(WORKFLOW_ID, open({str(path)!r}).read())
result = asyncio.run(build_replayer(TEST_CATALOG).replay_workflow(history))
print("hashed" if _worker._default_build_id else "not hashed")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "not hashed", done.stdout + done.stderr
