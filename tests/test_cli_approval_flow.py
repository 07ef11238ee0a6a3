"""The whole approval flow through the real `temporal` CLI binary, as an operator would run
it: start, see what is pending (query, current details), approve with the command the run
hands out, decide with an update, read the result."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import uuid
from typing import Any

from temporalio.testing import WorkflowEnvironment

from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import BIN, AgentHarness


class Cli:
    """Runs `temporal` against the test server, off the event loop the worker runs on."""

    def __init__(self, address: str) -> None:
        self.address = address

    async def __call__(self, *args: str, ok: bool = True) -> str:
        command = [str(BIN / "temporal"), *args, "--address", self.address]
        done = await asyncio.to_thread(
            subprocess.run, command, capture_output=True, text=True, timeout=60
        )
        if ok:
            assert done.returncode == 0, f"{command}: {done.stderr}"
        return done.stdout + done.stderr

    async def json(self, *args: str) -> Any:
        return json.loads(await self(*args, "--output", "json"))

    async def paste(self, command: str) -> str:
        """Run a command exactly as printed for a person (`temporal workflow signal ...`), in
        a shell whose environment names no server: it must say where its server is."""
        words = shlex.split(command)
        assert words[0] == "temporal"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}
        done = await asyncio.to_thread(
            subprocess.run, [str(BIN / "temporal"), *words[1:]],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
        assert done.returncode == 0, f"{command}: {done.stderr}"
        return done.stdout + done.stderr


async def test_approval_flow_from_the_temporal_cli(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = Cli(temporal_env.client.service_client.config.target_host)
    workflow_id = f"cli-approve-{uuid.uuid4()}"
    agent.fake.enqueue(
        fake.tool_calls(
            fake.call("write_file", {"path": "report.md", "content": "# Report"}, id="w1"),
            fake.call("write_file", {"path": "extra.md", "content": "extra"}, id="w2"),
        ),
        fake.text("Report written."),
    )
    await cli(
        "workflow", "start", "--type", "AgentWorkflow", "--task-queue", agent.task_queue,
        "--workflow-id", workflow_id,
        "--input", '{"prompt": "write the report", "tools": ["write_file"]}',
    )  # fmt: skip

    async def two_pending() -> list[dict[str, Any]]:
        answer = await cli.json(
            "workflow", "query", "--workflow-id", workflow_id, "--type", "pending_approvals"
        )
        pending: list[dict[str, Any]] = answer["queryResult"][0] or []
        assert len(pending) == 2, pending
        return pending

    pending = await eventually(two_pending, what="two pending approvals")
    assert [p["call_id"] for p in pending] == ["w1", "w2"]
    assert pending[0]["args"] == {"path": "report.md", "content": "# Report", "overwrite": True}

    details = await cli("workflow", "metadata", "--workflow-id", workflow_id)
    assert "waiting for approval: `write_file" in details
    assert f"temporal workflow signal --workflow-id {workflow_id} --name approve" in details
    # The test's server is on a port of its own: the commands handed out name it (issue 31, 8).
    assert pending[0]["command"].endswith(f" --address {cli.address}"), pending[0]["command"]
    assert pending[0]["command"] in details

    refused = await cli(
        "workflow", "update", "execute", "--workflow-id", workflow_id, "--name", "decide",
        "--input", '{"call_id": "w9", "decision": "approve"}',
        ok=False,
    )  # fmt: skip
    assert "no pending call 'w9' (unknown or already decided); pending: w1, w2" in refused
    # Approve w1 with exactly the command the run handed out.
    await cli.paste(pending[0]["command"])
    # Reject w2 with the update, which answers with the recorded decision.
    decided = await cli.json(
        "workflow", "update", "execute", "--workflow-id", workflow_id, "--name", "decide",
        "--input", '{"call_id": "w2", "decision": "reject", "reason": "not needed", "by": "ops"}',
    )  # fmt: skip
    assert decided["result"]["outcome"] == "rejected"

    result = await cli.json("workflow", "result", "--workflow-id", workflow_id)
    assert result["status"] == "COMPLETED"
    outcome = result["result"]
    assert outcome["answer"] == "Report written."
    assert [(s["call_id"], s["status"]) for s in outcome["steps"]] == [
        ("w1", "ok"),
        ("w2", "rejected"),
    ]
    late = await cli("workflow", "signal", "--workflow-id", workflow_id, "--name", "approve",
                     "--input", '{"call_id": "w2"}', ok=False)  # fmt: skip
    assert "workflow execution already completed" in late
    assert (agent.workspace / "report.md").read_text() == "# Report"
    assert not (agent.workspace / "extra.md").exists()
