"""`agent run --output-schema FILE`: the run's answer must match the schema; the CLI prints the
validated JSON (and the whole result with --json). Real subprocess, real server, fake model."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from durable_agents.testing import fake_openai as fake
from tests.conftest import AgentHarness
from tests.test_cli_run import AgentCli

SCHEMA = {
    "type": "object",
    "properties": {"product": {"type": "integer"}, "steps": {"type": "integer"}},
    "required": ["product", "steps"],
}


async def test_run_prints_the_validated_json(
    agent: AgentHarness, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(SCHEMA))
    agent.fake.enqueue(
        fake.tool_calls(fake.call("final_result", {"product": "425"}, id="f1")),
        fake.tool_calls(fake.call("final_result", {"product": 425, "steps": 1}, id="f2")),
    )
    cli = AgentCli.of(agent, temporal_env)
    workflow_id = f"cli-typed-{uuid.uuid4()}"

    done = await cli("run", "17 * 25?", "--output-schema", str(schema_file), "--id", workflow_id)

    assert done.code == 0, done
    printed = done.out[done.out.rindex("{") :]  # the answer comes last, as indented JSON
    assert json.loads(printed) == {"product": 425, "steps": 1}
    assert '"product": 425' in done.out.splitlines()[-3]

    as_json = await cli("--json", "result", workflow_id)
    assert as_json.json()["output"] == {"product": 425, "steps": 1}


async def test_a_bad_schema_file_is_refused_before_anything_starts(
    agent: AgentHarness, temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    schema_file = tmp_path / "schema.json"
    schema_file.write_text("[1, 2]")
    cli = AgentCli.of(agent, temporal_env)

    done = await cli("run", "x", "--output-schema", str(schema_file))
    assert done.one_error_line() == "agent: --output-schema must be a JSON object, got list"
    missing = await cli("run", "x", "--output-schema", str(tmp_path / "nope.json"))
    assert "--output-schema: cannot read" in missing.one_error_line()
    schema_file.write_text('{"type": "objekt"}')
    invalid = await cli("run", "x", "--output-schema", str(schema_file))
    assert invalid.one_error_line().startswith(
        "agent: --output-schema: not a valid JSON Schema: 'objekt' is not valid"
    )
    assert agent.fake.request_count == 0
