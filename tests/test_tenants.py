"""Tenants and signed decisions (issue 35, parts 2 and 3) through `AgentClient` with a principal,
on a real dev server and worker: a run starts in its principal's tenant (input, memo and the
`AgentTenant` search attribute), another tenant's run answers exactly as a missing one, an
admin reaches every tenant, a decision records the principal who made it (a forged `by`
changes nothing; a plain signal's `by` is self-declared), and the two-person rule refuses the
starter's own approval while the call keeps waiting."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from durable_agents.client import AgentClient, RunHandle
from durable_agents.contracts.agent_input import AgentInput
from durable_agents.contracts.agents import AgentProfile, ParentLink
from durable_agents.contracts.principals import DEFAULT_TENANT, DecisionMaker, Principal
from durable_agents.contracts.scratchpad import Scratchpad
from durable_agents.errors import (
    AlreadyDecided,
    ApproverRoleMissing,
    InvalidInput,
    RunNotFound,
    StarterCannotApprove,
)
from durable_agents.runtime import search_attributes
from durable_agents.servers.auth.authenticator import Authenticator, PrincipalsSource
from durable_agents.servers.auth.principals_file import add_principal
from durable_agents.workflows.delegation import child_input
from durable_agents.workflows.search_attributes import AGENT_TENANT
from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.catalog import TEST_CATALOG
from tests.conftest import FAKE_MODEL, AgentHarness, ScriptedHarness, started_workers
from tests.http_api_support import live_api
from tests.scripted_model import ScriptedChatModel
from tests.test_cli_run import AgentCli
from tests.test_sub_agents import delegates_a_write

CATALOG = TEST_CATALOG.with_search_attributes()
ALICE = Principal(name="alice", tenant="acme", roles=frozenset({"start", "approve", "read"}))
ANNA = Principal(name="anna", tenant="acme", roles=frozenset({"approve", "read"}))
BOB = Principal(name="bob", tenant="globex", roles=frozenset({"start", "approve", "read"}))
ROOT = Principal(name="root", tenant="ops", roles=frozenset({"admin"}))
WRITE = {"path": "w.txt", "content": "hi"}
TWO_PERSON = {
    "rules": [
        {"tools": "write_*", "action": "ask", "approval": {"distinct_from_starter": True}},
    ]
}


@dataclass
class Tenants:
    client: Client
    queue: str
    model: ScriptedChatModel

    def agents(self, principal: Principal | None = None) -> AgentClient:
        return AgentClient(self.client, task_queue=self.queue, principal=principal)

    async def waiting_run(
        self, principal: Principal, then: Any = None, **settings: Any
    ) -> RunHandle:
        """A run `principal` starts that waits for the approval of `write_file` call w1 (then
        the model answers `then`: "ok" by default)."""
        self.model.enqueue(
            sm.tool_calls(sm.call("write_file", WRITE, id="w1")), then or sm.text("ok")
        )
        run = await self.agents(principal).start(
            None, "write it", id=f"tenant-{uuid.uuid4().hex[:10]}", tools=["write_file"],
            **settings,
        )  # fmt: skip
        assert await run.next_request() is not None
        return run


@pytest.fixture
async def tenants(temporal_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[Tenants]:
    client = temporal_env.client
    assert await search_attributes.ensure(client)
    model = ScriptedChatModel(default_model=FAKE_MODEL)
    async with AsyncExitStack() as stack:
        queue = await started_workers(stack, client, model, tmp_path, catalog=CATALOG)
        yield Tenants(client, queue, model)


def missing_message(error: RunNotFound, workflow_id: str) -> str:
    return str(error).replace(workflow_id, "<id>")


async def test_another_tenants_run_answers_exactly_as_a_missing_one(tenants: Tenants) -> None:
    """Everything bob (tenant globex) may try on alice's run (tenant acme) is `RunNotFound`
    with the words of a run that does not exist; the run still waits, untouched."""
    run = await tenants.waiting_run(ALICE)
    bobs = tenants.agents(BOB)
    missing_id = f"missing-{uuid.uuid4().hex[:10]}"
    with pytest.raises(RunNotFound) as missing:
        await bobs.open_run(missing_id)
    theirs = bobs.run(run.id)
    attempts = {
        "open": bobs.open_run(run.id),
        "status": theirs.status(),
        "pending": theirs.pending(),
        "approve": theirs.approve("w1"),
        "reject": theirs.reject("w1", reason="no"),
        "steer": theirs.steer("stop"),
        "cancel": theirs.cancel(),
        "read_events": theirs.read_events(),
        "result": theirs.outcome(wait=False),
    }
    for what, attempt in attempts.items():
        with pytest.raises(RunNotFound) as refused:
            await attempt
        assert missing_message(refused.value, run.id) == missing_message(
            missing.value, missing_id
        ), what
    with pytest.raises(RunNotFound):
        async for _ in theirs.events():
            pass
    assert await theirs.stream_offset() == 0  # as for a run that does not exist
    assert [r.call_id for r in await run.pending()] == ["w1"]  # alice's run: untouched
    assert await tenants.agents(ROOT).run(run.id).pending()  # an admin reaches every tenant


async def test_a_run_starts_in_its_principals_tenant_and_is_listed_there(
    tenants: Tenants,
) -> None:
    """The input carries the tenant and the starter; `AgentTenant` says the tenant, so a
    visibility query by tenant finds it; a non-admin cannot start in another tenant."""
    run = await tenants.waiting_run(ALICE)
    description = await run.describe()
    history = await run.workflow.fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    payload = tenants.client.data_converter.payload_converter.from_payloads(
        list(started.input.payloads)
    )[0]
    assert (payload["tenant"], payload["starter"]) == ("acme", "alice")
    assert (await description.memo())["tenant"] == "acme"

    async def tagged() -> bool:
        found = (await run.workflow.describe()).typed_search_attributes.get(AGENT_TENANT)
        assert found == "acme"
        query = f'AgentTenant="acme" AND WorkflowId="{run.id}"'
        assert [w.id async for w in tenants.client.list_workflows(query)] == [run.id]
        return True

    await eventually(tagged, what="the run's AgentTenant")
    with pytest.raises(InvalidInput, match="tenant"):
        await tenants.agents(ALICE).start(None, "x", tenant="globex", tools=["write_file"])
    await run.reject("w1")


async def test_a_decision_records_its_principal_whatever_by_says(tenants: Tenants) -> None:
    """Alice's approval with a forged `by` is recorded as alice's (not self-declared), once:
    sending it again is `AlreadyDecided`; a plain signal's `by` is recorded as self-declared."""
    run = await tenants.waiting_run(ALICE)
    decision = await run.approve("w1", by="mallory")
    assert decision.by == "alice"
    assert decision.maker == DecisionMaker(name="alice", tenant="acme", self_declared=False)
    with pytest.raises(AlreadyDecided):  # a replayed decision changes nothing
        await run.approve("w1", by="mallory")
    result = await run.result()
    [step] = result.steps
    assert step.human is not None and step.human.maker == decision.maker

    plain = await tenants.waiting_run(ALICE)
    await plain.workflow.signal("approve", {"call_id": "w1", "by": "carol"})
    [step] = (await plain.result()).steps
    assert step.human is not None
    assert step.human.maker == DecisionMaker(name="carol", self_declared=True)


async def test_the_starter_cannot_approve_a_two_person_call(tenants: Tenants) -> None:
    """With `approval: {distinct_from_starter: true}`, alice's approval of her own run's call
    is `StarterCannotApprove` and the call keeps waiting; anna (same tenant) approves it."""
    run = await tenants.waiting_run(ALICE, approval_policy=TWO_PERSON)
    with pytest.raises(StarterCannotApprove, match="two-person rule"):
        await run.approve("w1")
    assert [r.call_id for r in await run.pending()] == ["w1"]
    await run.workflow.signal("approve", {"call_id": "w1", "by": "alice"})  # nor by signal
    assert [r.call_id for r in await run.pending()] == ["w1"]
    decision = await tenants.agents(ANNA).run(run.id).approve("w1")
    assert (decision.outcome, decision.by) == ("approved", "anna")
    assert (await run.result()).answer == "ok"


async def test_a_call_reserved_to_a_role_is_approved_only_by_that_role(tenants: Tenants) -> None:
    """`approval: {role: admin}`: the request says so; anna (approve) is
    `ApproverRoleMissing` and nothing is sent; an admin approves it."""
    policy = {"rules": [{"tools": "write_*", "action": "ask", "approval": {"role": "admin"}}]}
    run = await tenants.waiting_run(ALICE, approval_policy=policy)
    [request] = await run.pending()
    assert request.approval is not None and request.approval.role == "admin"
    with pytest.raises(ApproverRoleMissing, match="'admin' role"):
        await tenants.agents(ANNA).run(run.id).approve("w1", digest=request.args_digest)
    assert [r.call_id for r in await run.pending()] == ["w1"]
    decision = await tenants.agents(ROOT).run(run.id).approve("w1")
    assert decision.by == "root"
    assert (await run.result()).answer == "ok"


async def test_a_session_runs_in_its_tenant_and_is_missing_to_another(tenants: Tenants) -> None:
    alices = tenants.agents(ALICE)
    session = await alices.start_session({}, id=f"tenant-session-{uuid.uuid4().hex[:8]}")
    description = await session._calls.describe()
    assert (await description.memo())["tenant"] == "acme"
    bobs = tenants.agents(BOB).session(session.id)
    with pytest.raises(RunNotFound):
        await bobs.send_nowait("hello")
    with pytest.raises(RunNotFound):
        await bobs.status()
    await alices.session(session.id).end()


def test_sub_agents_and_plan_steps_inherit_the_tenant_and_the_starter() -> None:
    """A child run's input (`delegation.child_input`: sub-agents and plan steps alike) keeps
    its parent's tenant and starter; a run without them is in the default tenant."""
    parent = AgentInput(prompt="go", tenant="acme", starter="alice")
    profile = AgentProfile(name="helper", description="helps", system_prompt="help")
    link = ParentLink(workflow_id="parent", call_id="c1", call_key="c1")
    child = child_input(parent, Scratchpad(messages=[]), profile, "task", link)
    assert (child.tenant, child.starter) == ("acme", "alice")
    plain = child_input(AgentInput(prompt="go"), Scratchpad(messages=[]), profile, "t", link)
    assert (plain.tenant, plain.starter) == (DEFAULT_TENANT, None)


async def test_agent_audit_lists_every_decision_with_its_maker(
    tenants: Tenants, temporal_env: WorkflowEnvironment
) -> None:
    """`agent audit` (the real CLI, a subprocess) on a real dev server: an approval signed by
    alice, a plain signal's self-declared approval, bob's rejection (tenant globex) of a run
    still running, and a timeout, each once, with its tool, digest and outcome; `--tenant`
    keeps one tenant's; the table says who was self-declared."""
    signed = await tenants.waiting_run(ALICE)
    shown = await signed.next_request()
    assert shown is not None
    await signed.approve("w1", digest=shown.args_digest, by="mallory")
    await signed.result()
    plain = await tenants.waiting_run(ALICE)
    await plain.workflow.signal("approve", {"call_id": "w1", "by": "carol"})
    await plain.result()
    running = await tenants.waiting_run(BOB, then=sm.tool_calls(sm.call("write_file", WRITE)))
    await running.reject("w1", reason="not now")  # then it waits again: it still runs
    timed = await tenants.waiting_run(ANNA.model_copy(update={"roles": ALICE.roles}),
                                      approval_timeout_seconds=1)  # fmt: skip
    await timed.result()

    cli = AgentCli(temporal_env.client.service_client.config.target_host, tenants.queue)
    done = await cli("audit", "--since", "10m", "--json")
    assert done.code == 0, done.err
    records = [json.loads(line) for line in done.out.splitlines()]
    mine = {signed.id, plain.id, running.id, timed.id}
    seen = {
        (r["workflow_id"], r["call_id"], r["outcome"], r["by"], r["self_declared"], r["tenant"])
        for r in records
        if r["workflow_id"] in mine
    }
    assert seen == {
        (signed.id, "w1", "approved", "alice", False, "acme"),
        (plain.id, "w1", "approved", "carol", True, "acme"),
        (running.id, "w1", "rejected", "bob", False, "globex"),
        (timed.id, "w1", "timed_out", None, None, "acme"),
    }, records
    [approval] = [r for r in records if r["workflow_id"] == signed.id]
    assert approval["tool"] == "write_file" and approval["by_tenant"] == "acme"
    assert approval["args_digest"] == approval["digest_named"] == shown.args_digest

    globex = await cli("audit", "--since", "10m", "--tenant", "globex", "--json")
    assert {json.loads(line)["workflow_id"] for line in globex.out.splitlines()} >= {running.id}
    assert all(json.loads(line)["tenant"] == "globex" for line in globex.out.splitlines())
    as_table = await cli("audit", "--since", "10m")
    assert as_table.code == 0, as_table.err
    [line] = [row for row in as_table.out.splitlines() if plain.id in row]
    assert "carol (self-declared)" in line and "approved" in line
    assert as_table.out.splitlines()[0].split()[:3] == ["WHEN", "(UTC)", "TENANT"]


async def test_each_principal_lists_only_its_tenants_runs(tenants: Tenants, tmp_path: Path) -> None:
    """`GET /v1/runs` on a real `agent serve` with a principals file: alice sees acme's runs,
    bob globex's, an admin both (the `AgentTenant` visibility query)."""
    path = tmp_path / "principals.toml"
    tokens = {p.name: add_principal(path, p.name, p.tenant, p.roles) for p in (ALICE, BOB, ROOT)}
    acme = await tenants.waiting_run(ALICE)
    await acme.reject("w1")  # (the model's next reply is its: one run at a time)
    await acme.result()
    globex = await tenants.waiting_run(BOB)
    await globex.reject("w1")
    harness = cast(AgentHarness, SimpleNamespace(client=tenants.client, task_queue=tenants.queue))
    authenticator = Authenticator(principals=PrincipalsSource(path))
    async with live_api(harness, token=None, authenticator=authenticator) as api:

        async def listed(name: str) -> set[str]:
            headers = {"Authorization": f"Bearer {tokens[name]}"}
            answer = await api.http.get("/v1/runs?limit=1000", headers=headers)
            assert answer.status_code == 200, answer.text
            return {run["workflow_id"] for run in answer.json()}

        async def separated() -> bool:
            alices, bobs, roots = await listed("alice"), await listed("bob"), await listed("root")
            assert acme.id in alices and globex.id not in alices
            assert globex.id in bobs and acme.id not in bobs
            assert {acme.id, globex.id} <= roots
            return True

        await eventually(separated, what="each tenant's runs listed apart")


async def test_a_sub_agents_guarded_call_keeps_the_two_person_rule(
    scripted_agent: ScriptedHarness,
) -> None:
    """A child run inherits its parent's tenant, starter and policy: its guarded call, shown at
    the parent, is refused to the starter there (nothing is forwarded) and approved by another
    principal of the tenant, whose name the child records."""

    scripted_agent.model.set_handler(delegates_a_write)
    agents = AgentClient(
        scripted_agent.client, task_queue=scripted_agent.task_queue, principal=ALICE
    )
    run = await agents.start(
        None, "write", agents=["writer"], approval_policy=TWO_PERSON, id=f"tp-{uuid.uuid4()}"
    )
    request = await run.next_request()
    assert request is not None and request.call_id == "writer-d1/w1"
    assert request.approval is not None and request.approval.distinct_from_starter
    with pytest.raises(StarterCannotApprove):
        await run.approve(request.call_id, digest=request.args_digest)
    assert [r.call_id for r in await run.pending()] == ["writer-d1/w1"]
    decision = (
        await AgentClient(scripted_agent.client, principal=ANNA)
        .run(run.id)
        .approve(request.call_id, digest=request.args_digest)
    )
    anna = DecisionMaker(name="anna", tenant="acme", self_declared=False)
    assert (decision.by, decision.maker) == ("anna", anna)
    assert (await run.result()).answer == "done"
    child = AgentClient(scripted_agent.client, principal=ANNA).run(f"{run.id}/writer-d1")
    description = await child.describe()  # the child is in alice's tenant: anna reaches it
    assert (await description.memo())["tenant"] == "acme"  # recorded by the parent
    [step] = (await child.result()).steps
    assert step.human is not None and step.human.maker == decision.maker
