"""`AGENT_TOOL_MODULES` loads a module that registers tools: the shipped example,
`examples/unit_tools.py`, through a real `python worker.py` (the variable is read only there),
the real `openai` client and the fake model server that calls the tool.

The pytest process never imports the example, so its own tool list stays the application's.
"""

from __future__ import annotations

import sys
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from testkit.crash_tools import WorkerCluster
from tests.conftest import activity_types, local_activities

MODULE = "examples.unit_tools"


async def test_the_example_module_adds_its_tool_to_a_worker(
    temporal_env: WorkflowEnvironment, fake_model: FakeOpenAIServer, tmp_path: Path
) -> None:
    assert MODULE not in sys.modules
    cluster = WorkerCluster(
        temporal_env.client,
        fake_model.base_url,
        tmp_path,
        extra_env={"AGENT_TOOL_MODULES": MODULE},
    )
    try:
        worker = await cluster.start_worker()
        banner = next(line for line in worker.output().splitlines() if "Worker ready" in line)
        assert ", weather, convert_units, " in banner, banner  # after the built-in tools

        fake_model.enqueue(
            fake.tool_calls(
                fake.call("convert_units", {"value": 10, "from_unit": "km", "to_unit": "mi"}),
                fake.call("convert_units", {"value": 100, "from_unit": "C", "to_unit": "F"}),
                fake.call("convert_units", {"value": 1, "from_unit": "kg", "to_unit": "m"}),
            ),
            fake.text("10 km is about 6.2 miles."),
        )
        handle = await cluster.start_run(
            {"prompt": "How far is 10 km in miles?", "tools": ["convert_units"]}
        )
        result = await cluster.result_of(handle)
    finally:
        await cluster.close()

    assert result.answer == "10 km is about 6.2 miles."
    assert [(s.tool, s.status, s.observation) for s in result.steps] == [
        ("convert_units", "ok", "10 km = 6.21371 mi"),
        ("convert_units", "ok", "100 C = 212 F"),
        ("convert_units", "error", "Error: cannot convert mass (kg) to length (m)"),
    ]
    # The model saw the tool's schema, with the descriptions of its fields.
    [offered] = fake_model.requests[0]["tools"]
    assert offered["function"]["name"] == "convert_units"
    assert "Convert an amount between units" in offered["function"]["description"]
    assert set(offered["function"]["parameters"]["properties"]) == {"value", "from_unit", "to_unit"}
    # Pure, so a local activity: markers, no activity events for it.
    assert [t for t, _ in await local_activities(handle)] == ["convert_units"] * 3
    assert "convert_units" not in await activity_types(handle)
