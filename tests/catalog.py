"""The catalog the tests' workers serve (`TEST_CATALOG`): the application's (`CATALOG`) plus the
tools that exist only for the tests and the benchmarks' `fixed_output`. Test modules add their
own profiles, output types and tools here, never to the application's catalog, which stays what
`worker.py` serves (a tool module loaded through AGENT_TOOL_MODULES, as `testkit.fixed_output`
is by the benchmarks' worker processes, registers into that one: it is left out here if so)."""

from __future__ import annotations

from durable_agents.tools.catalog import CATALOG
from testkit.fixed_output import BENCH_TOOLS
from tests.agent_test_tools import TEST_TOOLS

TEST_CATALOG = CATALOG.extended(
    tools=[t for t in [*TEST_TOOLS, *BENCH_TOOLS] if CATALOG.tools.get(t.name) is None]
)
