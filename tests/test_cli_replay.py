"""`agent replay`: the command the README gives users to replay their production histories in
CI, on a plain `Replayer` (the workflow classes and the data converter, no catalog flags): the
committed histories, a run's history downloaded with `temporal workflow show --output json`, the
same run by `--workflow-id` and `--query`, and a history that no longer replays, named."""

from __future__ import annotations

import asyncio
import json
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from durable_agents.runtime import search_attributes
from durable_agents.runtime.dev_server import temporal_cli
from durable_agents.workflows.search_attributes import SEARCH_ATTRIBUTES_MARKER
from tests import scripted_model as sm
from tests.catalog import TEST_CATALOG
from tests.conftest import FAKE_MODEL, started_workers
from tests.scripted_model import ScriptedChatModel
from tests.test_cli_run import AgentCli
from tests.test_replay_configurations import markers

HISTORIES = Path(__file__).parent / "histories"
TOOL_MODULE = "tests.replay_tool_module"


def agent_cli(env: WorkflowEnvironment | None = None) -> AgentCli:
    """`agent` against the test server (or none: files only), the tests' tools loaded as a
    user's tool module is (`AGENT_TOOL_MODULES`)."""
    address = env.client.service_client.config.target_host if env else "127.0.0.1:1"
    cli = AgentCli(address, "unused")
    cli.env["AGENT_TOOL_MODULES"] = TOOL_MODULE
    return cli


async def test_every_committed_history_replays_with_agent_replay() -> None:
    files = sorted(str(p) for p in HISTORIES.rglob("*.json"))
    done = await agent_cli()("replay", *files, timeout=120)
    assert done.code == 0, done.out + done.err
    lines = done.out.splitlines()
    assert sum(line.startswith("ok ") for line in lines) == len(files)
    assert lines[-1] == f"{len(files)} of {len(files)} histories replay"


async def test_a_history_that_no_longer_replays_is_named(tmp_path: Path) -> None:
    """The first model call of `simple.json` made into a weather call: the code schedules
    `call_model`, the history says `weather`."""
    history = json.loads((HISTORIES / "simple.json").read_text())
    scheduled = [
        e["activityTaskScheduledEventAttributes"]["activityType"]
        for e in history["events"]
        if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
    ]
    assert [t["name"] for t in scheduled] == ["call_model", "call_model"]
    scheduled[0]["name"] = "weather"
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(history))
    done = await agent_cli()("replay", str(HISTORIES / "session.json"), str(broken), timeout=60)
    assert done.code == 1, done.out + done.err
    ok, failed, total = done.out.splitlines()
    assert ok.startswith("ok      recorded ")
    assert failed.startswith("FAILED  recorded ") and "Nondeterminism" in failed, failed
    assert total == "1 of 2 histories replay"


async def test_a_downloaded_run_replays_by_file_id_and_query(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A run kept with the search attributes (the marker of issue 39 in its history), fetched
    the three ways the README shows."""
    client = temporal_env.client
    assert await search_attributes.ensure(client)
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(sm.tool_calls(sm.call("calculator", {"expression": "2+2"})), sm.text("4"))
    workflow_id = f"replay-cli-{uuid.uuid4()}"
    async with AsyncExitStack() as stack:
        queue = await started_workers(
            stack, client, model, tmp_path, catalog=TEST_CATALOG.with_search_attributes()
        )
        handle = await client.start_workflow(
            "AgentWorkflow",
            {"prompt": "2+2?", "tools": ["calculator"]},
            id=workflow_id,
            task_queue=queue,
        )
        await handle.result()
    address = client.service_client.config.target_host
    shown = await asyncio.create_subprocess_exec(
        str(temporal_cli()), "workflow", "show", "--workflow-id", workflow_id,
        "--address", address, "--output", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await shown.communicate()
    assert shown.returncode == 0, err.decode()
    shown_markers = markers(WorkflowHistory.from_json(workflow_id, out.decode()))
    assert any(SEARCH_ATTRIBUTES_MARKER in m for m in shown_markers), shown_markers
    path = tmp_path / f"{workflow_id}.json"
    path.write_bytes(out)
    cli = agent_cli(temporal_env)
    for args in (
        [str(path)],
        ["--workflow-id", workflow_id],
        ["--query", f'WorkflowId="{workflow_id}"', "--limit", "5"],
    ):
        done = await cli("replay", *args, timeout=60)
        assert done.code == 0, done.out + done.err
        assert done.out.startswith(f"ok      {workflow_id} "), done.out
        assert done.out.splitlines()[-1] == "1 of 1 histories replay"
    missing = await cli("replay", "--workflow-id", "no-such-run", timeout=60)
    assert missing.code == 4 and "no run matches" in missing.err, missing.err


async def test_a_replayer_without_the_runs_tools_says_which() -> None:
    """Tools are code: a replayer without the module that registers them cannot replay the runs
    that called them, and says which tools it lacks."""
    cli = agent_cli()
    del cli.env["AGENT_TOOL_MODULES"]
    done = await cli("replay", str(HISTORIES / "parallel_tools.json"), timeout=60)
    assert done.code == 1, done.out + done.err
    assert "the run names echo, refuses, which this replayer does not have" in done.out
    assert "AGENT_TOOL_MODULES" in done.out
