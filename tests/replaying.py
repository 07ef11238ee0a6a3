"""One check the tests share: a history replays on today's workflow code without
nondeterminism, with the catalog the test's worker served."""

from __future__ import annotations

from temporalio.client import WorkflowHistory

from durable_agents.runtime.workers import build_replayer
from durable_agents.tools.catalog import Catalog
from tests.catalog import TEST_CATALOG


async def assert_replays(history: WorkflowHistory, catalog: Catalog = TEST_CATALOG) -> None:
    """Replay `history` (a run's, fetched, or a recorded one) and fail naming what diverged."""
    outcome = await build_replayer(catalog).replay_workflow(history, raise_on_replay_failure=False)
    assert outcome.replay_failure is None, outcome.replay_failure
