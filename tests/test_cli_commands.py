"""`agent pending / approve / reject / reply / status / result / watch` as real subprocesses
against runs the tests start, and the errors people run into: unknown call ids, unknown runs,
runs that already ended, a server that is not there."""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.testing import fake_openai as fake
from tests.conftest import AgentHarness
from tests.hitl_support import wait_for_pending
from tests.test_cli_run import AgentCli, write_call


async def started(
    agent: AgentHarness, prompt: str, tools: list[str], pending: int
) -> WorkflowHandle[Any, Any]:
    """A run started by the test, waiting with `pending` requests."""
    handle = await agent.start(
        {"prompt": prompt, "tools": tools}, workflow_id=f"cli-cmd-{uuid.uuid4()}"
    )
    await wait_for_pending(handle, pending)
    return handle


async def test_pending_approve_reject_status_result(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    agent.fake.enqueue(
        fake.tool_calls(
            fake.call("write_file", {"path": "keep.md", "content": "# Keep"}, id="w1"),
            fake.call("write_file", {"path": "drop.md", "content": "drop"}, id="w2"),
        ),
        fake.text("One written, one refused."),
    )
    handle = await started(agent, "write two files", ["write_file"], pending=2)
    wid = handle.id

    listed = await cli("pending", wid, "--json")
    shown = await cli("pending", wid)
    running = await cli("status", wid)
    unknown_call = await cli("approve", wid, "w9")
    approved = await cli("approve", wid, "w1", "--by", "alice", "--comment", "ok", "--json")
    rejected = await cli("reject", wid, "w2", "--reason", "not needed", "--by", "ops")
    result = await cli("result", wid, "--json")
    late = await cli("approve", wid, "w2")
    status = await cli("--json", "status", wid)
    replay = await cli("watch", wid)

    assert [p["call_id"] for p in listed.json()] == ["w1", "w2"]
    assert listed.json()[0]["args"] == {"path": "keep.md", "content": "# Keep", "overwrite": True}
    assert f"approve {wid} w1" in shown.out and f"reject {wid} w2 --reason" in shown.out
    assert f"{wid} · RUNNING · waiting_for_human" in running.out
    error = unknown_call.one_error_line()
    assert "'w9'" in error and "no pending call 'w9'" in error and "pending: w1, w2" in error
    assert unknown_call.code == 4
    decision = approved.json()
    assert (decision["call_id"], decision["outcome"], decision["by"]) == ("w1", "approved", "alice")
    assert decision["comment"] == "ok"
    assert rejected.code == 0 and rejected.out.strip() == "rejected w2 by ops: not needed"
    assert result.code == 0
    assert result.json()["answer"] == "One written, one refused."
    assert [(s["call_id"], s["status"]) for s in result.json()["steps"]] == [
        ("w1", "ok"),
        ("w2", "rejected"),
    ]
    assert "has already ended (completed)" in late.one_error_line()
    assert status.json()["execution_status"] == "COMPLETED"
    assert status.json()["phase"] == "done" and status.json()["stop_reason"] == "completed"
    assert replay.code == 0
    assert "✓ write_file" in replay.out and "⊘ write_file" in replay.out
    assert replay.out.rstrip().endswith("One written, one refused.")
    assert (agent.workspace / "keep.md").read_text() == "# Keep"
    assert not (agent.workspace / "drop.md").exists()


async def test_reply_and_approve_all(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    agent.fake.enqueue(
        fake.tool_calls(fake.call("ask_user", {"question": "Which colour?"}, id="q1")),
        fake.tool_calls(
            fake.call("write_file", {"path": "a.txt", "content": "blue"}, id="w1"),
            fake.call("write_file", {"path": "b.txt", "content": "blue"}, id="w2"),
        ),
        fake.text("Both files say blue."),
    )
    handle = await started(agent, "ask, then write", ["ask_user", "write_file"], pending=1)
    wid = handle.id

    wrong_kind = await cli("approve", wid, "q1")
    all_while_asking = await cli("approve", wid, "*")
    reject_all_while_asking = await cli("reject", wid, "*", "--reason", "no")
    unknown = await cli("reply", wid, "q9", "red")
    replied = await cli("reply", wid, "q1", "blue")
    await wait_for_pending(handle, 2)
    all_approved = await cli("approve", wid, "*")
    result = await cli("result", wid)

    assert "cannot approve 'q1'" in wrong_kind.one_error_line()
    assert all_while_asking.one_error_line() == (
        f"agent: no approval is pending in {wid}, but a question waits (call q1); answer it "
        f"with agent --address {cli.address} reply {wid} q1 'your answer'"
    )
    assert reject_all_while_asking.one_error_line() == all_while_asking.one_error_line()
    assert "no pending question 'q9'" in unknown.one_error_line()
    assert replied.code == 0 and replied.out.strip() == "replied to q1"
    assert all_approved.out.strip() == "approved 2 pending calls: w1, w2"
    assert result.code == 0 and result.out.rstrip().endswith("Both files say blue.")
    assert (agent.workspace / "b.txt").read_text() == "blue"


async def test_watch_attaches_and_approves(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    agent.fake.enqueue(write_call("w.txt", "watched"), fake.text("Written while watched."))
    handle = await started(agent, "write while watched", ["write_file"], pending=1)

    done = await cli("watch", handle.id, stdin="y\n")

    assert done.code == 0, done
    assert f"watching {handle.id} (RUNNING)" in done.out
    assert "→ approved w1" in done.out
    assert done.out.rstrip().endswith("Written while watched.")
    assert (agent.workspace / "w.txt").read_text() == "watched"


async def test_unknown_runs_and_unreachable_server(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    cli = AgentCli.of(agent, temporal_env)
    nowhere = AgentCli("127.0.0.1:1", agent.task_queue)

    status = await cli("status", "no-such-run")
    approve = await cli("approve", "no-such-run", "w1")
    result = await cli("result", "no-such-run", "--json")
    unreachable = await nowhere("status", "anything")

    for done in (status, approve, result):
        assert "no run with workflow id 'no-such-run'" in done.one_error_line()
        assert done.code == 4
    assert result.out == ""
    line = unreachable.one_error_line()
    assert "cannot reach the Temporal server at 127.0.0.1:1 (connection refused)" in line
    assert unreachable.code == 4
