"""Operators find the runs that wait: `AgentPhase`, `AgentWaitingFor` and `AgentTokens` follow a
run's state on a real dev server, `temporal workflow list --query` answers "which runs wait for
me?", a session between turns is `idle`, and a run recorded with the attributes replays."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.approvals import PendingRequest
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.loop.search_attributes import search_state
from durable_agents.runtime import search_attributes
from durable_agents.runtime.dev_server import temporal_cli
from durable_agents.workflows.search_attributes import AGENT_PHASE, AGENT_TOKENS, AGENT_WAITING_FOR
from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.catalog import TEST_CATALOG
from tests.conftest import FAKE_MODEL, started_workers
from tests.hitl_support import wait_for_pending
from tests.replaying import assert_replays
from tests.scripted_model import ScriptedChatModel
from tests.session_support import send_with_start
from tests.test_replay_configurations import agent_upserts

CATALOG = TEST_CATALOG.with_search_attributes()


def pending(kind: RequestKind, tool: str) -> PendingRequest:
    return PendingRequest(
        kind=kind, call_id=f"c-{tool}", tool=tool, args={}, args_digest="d",
        requested_at=datetime(2026, 1, 1, tzinfo=UTC), command="temporal ...",
    )  # fmt: skip


def test_search_state_names_what_waits_once_each_sorted() -> None:
    waiting = [
        pending(RequestKind.APPROVAL, "write_file"),
        pending(RequestKind.QUESTION, "ask_user"),
        pending(RequestKind.APPROVAL, "write_file"),
        pending(RequestKind.PLAN, "plan"),
    ]
    state = search_state("running_tools", waiting, 42)
    assert state.phase == "waiting_for_human"
    assert state.waiting_for == ("plan", "question", "write_file")
    assert state.tokens == 42


def test_search_phase_of_each_status_phase() -> None:
    shown = {
        phase: search_state(phase, [], 0).phase
        for phase in ("starting", "thinking", "running_tools", "done", "cancelled", "idle")
    }
    assert shown == {
        "starting": "thinking",
        "thinking": "thinking",
        "running_tools": "running_tools",
        "done": "done",
        "cancelled": "done",
        "idle": "idle",
    }


async def attributes(handle: WorkflowHandle[Any, Any]) -> tuple[str | None, list[str], int | None]:
    found = (await handle.describe()).typed_search_attributes
    return found.get(AGENT_PHASE), list(found.get(AGENT_WAITING_FOR) or []), found.get(AGENT_TOKENS)


async def listed(client: Client, query: str) -> set[str]:
    return {execution.id async for execution in client.list_workflows(query)}


async def test_a_waiting_run_is_found_by_phase_and_tool_then_done(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = temporal_env.client
    assert await search_attributes.ensure(client)
    assert await search_attributes.ensure(client)  # a second worker: nothing to add
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    args = {"path": "w.txt", "content": "hi"}
    model.enqueue(sm.tool_calls(sm.call("write_file", args, id="w1")), sm.text("written"))
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, tmp_path, catalog=CATALOG)
        handle = await client.start_workflow(
            "AgentWorkflow",
            {"prompt": "write it", "tools": ["write_file"]},
            id=f"sa-{uuid.uuid4()}",
            task_queue=queue,
        )
        await wait_for_pending(handle)

        async def waiting() -> bool:
            phase, names, tokens = await attributes(handle)
            assert (phase, names) == ("waiting_for_human", ["write_file"])
            assert tokens and tokens > 0
            query = f'AgentPhase="waiting_for_human" AND WorkflowId="{handle.id}"'
            assert await listed(client, query) == {handle.id}
            by_tool = f'AgentWaitingFor="write_file" AND WorkflowId="{handle.id}"'
            assert await listed(client, by_tool) == {handle.id}
            return True

        await eventually(waiting, what="the run listed as waiting for write_file")
        await run_cli_list(temporal_env, handle.id)

        await handle.signal("approve", {"call_id": "w1"})
        await handle.result()

        async def done() -> bool:
            phase, names, _ = await attributes(handle)
            assert (phase, names) == ("done", [])
            assert not await listed(
                client, f'AgentPhase="waiting_for_human" AND WorkflowId="{handle.id}"'
            )
            return True

        await eventually(done, what="the finished run's phase")

    history = await handle.fetch_history()
    upserts = [
        e for e in history.events
        if e.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
    ]  # fmt: skip
    assert upserts, "the run kept no search attributes"
    await assert_replays(history, CATALOG)


async def run_cli_list(env: WorkflowEnvironment, workflow_id: str) -> None:
    """The command an operator types, as documented: the real Temporal CLI."""
    target = env.client.service_client.config.target_host
    command = [
        str(temporal_cli()), "workflow", "list", "--address", target, "--output", "json",
        "--query", f'AgentPhase="waiting_for_human" AND WorkflowId="{workflow_id}"',
    ]  # fmt: skip
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    ids = {row["execution"]["workflowId"] for row in rows}
    assert ids == {workflow_id}


async def test_without_registration_a_run_keeps_none_and_completes(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A worker whose server lacks the attributes (the catalog says so) never upserts: no run
    wedges on a `BadSearchAttributes` workflow task."""
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(sm.text("plain"))
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, temporal_env.client, model, tmp_path)
        handle = await temporal_env.client.start_workflow(
            "AgentWorkflow", {"prompt": "hi"}, id=f"sa-off-{uuid.uuid4()}", task_queue=queue
        )
        await handle.result()
    assert not agent_upserts(await handle.fetch_history())


async def test_a_session_is_idle_between_turns(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = temporal_env.client
    assert await search_attributes.ensure(client)
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    model.enqueue(sm.text("hello back"))
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, tmp_path, catalog=CATALOG)
        result, handle = await send_with_start(client, f"sa-s-{uuid.uuid4()}", queue, "hello")
        assert result.answer == "hello back"

        async def idle() -> bool:
            phase, names, tokens = await attributes(handle)
            assert (phase, names) == ("idle", [])
            assert tokens and tokens > 0
            return True

        await eventually(idle, what="the session idle between turns")
