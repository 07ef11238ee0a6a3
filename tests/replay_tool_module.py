"""A tool module (`AGENT_TOOL_MODULES=tests.replay_tool_module`) that registers the tests' tools
in the application's catalog, as a user's tool module registers theirs: `agent replay` then
replays the committed histories, whose runs called them, on a plain `Replayer`
(tests/test_cli_replay.py). Imported only by such a process, never by the tests themselves,
whose catalog is `tests.catalog.TEST_CATALOG`."""

from __future__ import annotations

from durable_agents.tools.catalog import REGISTRY
from tests.catalog import TEST_CATALOG

for tool in TEST_CATALOG.tools.all():
    if REGISTRY.get(tool.name) is None:
        REGISTRY.register(tool)
