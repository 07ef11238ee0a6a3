"""What the interfaces reach runs with, now that nothing under `cli/` or `servers/` may use the
raw Temporal client (issue 33): `AgentClient.listed` (a typed, tenant-scoped visibility
listing), `AgentClient.tokens_used`, and a session's running turn (`SessionHandle.query_status`,
`turn_run`). On the real dev server and worker, the real `openai` client against the fake
model server."""

from __future__ import annotations

import uuid

import pytest
from temporalio.testing import WorkflowEnvironment

from durable_agents.client import AgentClient, ListedRun
from durable_agents.contracts.principals import Principal
from durable_agents.errors import RunNotFound
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually
from tests.conftest import AgentHarness

STARTS = frozenset({"start", "read", "approve"})


async def test_listed_runs_are_typed_and_in_the_clients_tenant(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    base = AgentClient(agent.client, task_queue=agent.task_queue, via="serve", only_own=False)
    acme = base.as_principal(Principal(name="ann", tenant="acme", roles=STARTS))
    globex = base.as_principal(Principal(name="gil", tenant="globex", roles=STARTS))
    agent.fake.enqueue(*(fake.text("an answer", usage=(30, 12)) for _ in range(2)))
    mine, theirs = await acme.start(None, "hi"), await globex.start(None, "hi")
    used = (await mine.result()).usage.total_tokens
    await theirs.result()
    query = f"TaskQueue = '{agent.task_queue}'"

    async def listed() -> tuple[ListedRun, ListedRun]:
        own = [r async for r in acme.listed(query)]
        assert [
            (r.workflow_id, r.run_id, r.workflow_type, r.status, r.tenant, r.starter, r.started_via)
            for r in own
        ] == [(mine.id, mine.run_id, "AgentWorkflow", "COMPLETED", "acme", "ann", "serve")], own
        every = {r.workflow_id: r async for r in base.listed(query)}
        assert set(every) == {mine.id, theirs.id}
        assert [r.workflow_id async for r in acme.listed(query, types=("SessionWorkflow",))] == []
        return own[0], every[theirs.id]

    own, other = await eventually(listed, what="both runs listed as completed")
    assert await acme.tokens_used(own) == used == 42
    with pytest.raises(RunNotFound):  # another tenant's run: as a missing one
        await acme.tokens_used(other)


async def test_a_sessions_running_child_turn_is_reached_through_its_handle(
    agent: AgentHarness,
) -> None:
    agents = AgentClient(agent.client, task_queue=agent.task_queue)
    agent.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "t.txt", "content": "x"}, id="w1")),
        fake.text("written"),
    )
    session = await agents.start_session({"turns": "child"}, id=f"s-{uuid.uuid4().hex[:8]}")
    update = await session.send_nowait("write it")

    async def waiting() -> str:
        status = await session.query_status()
        assert status is not None and status.running is not None, status
        assert [p.call_id for p in status.pending] == ["w1"], status
        return status.running.workflow_id

    child_id = await eventually(waiting, what="the child turn waiting for w1")
    running = (await session.status()).running
    assert running is not None and not running.inline
    turn = session.turn_run(running)
    assert turn.id == child_id == f"{session.id}/turn-1"
    state = await turn.query_status()
    assert state is not None and [p.call_id for p in state.pending] == ["w1"]
    [request] = await turn.pending()
    await turn.approve("w1", digest=request.args_digest)
    assert (await update.result()).answer == "written"
