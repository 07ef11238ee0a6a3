"""`AgentClient`, `RunHandle` and `SessionHandle` (`durable_agents.client`) on the real dev server
and worker, with the real `openai` client against the fake model server: approvals bound to the
digest of the arguments shown (approve, edit, reject), the typed errors of answers that cannot
apply (digest mismatch, already decided, unknown call, unknown run, invalid input), the typed
event stream resumed by offset, a session's message, and a run's failure as `RunFailedError`."""

from __future__ import annotations

import uuid

import pytest
from temporalio.testing import WorkflowEnvironment

from durable_agents.client import AgentClient, RunHandle
from durable_agents.errors import (
    AlreadyDecided,
    CallNotFound,
    DecisionRefused,
    DigestMismatch,
    InvalidInput,
    NotStartedHere,
    RunEnded,
    RunFailedError,
    RunNotFound,
)
from durable_agents.testing import fake_openai as fake
from durable_agents.tools.agents import RESEARCHER
from tests.conftest import AgentHarness
from tests.test_cli_run import AgentCli

WRITE = ["write_file"]


def writes(*ids: str) -> fake.Completion:
    """One model turn that calls `write_file` once per id (`<id>.txt`)."""
    return fake.tool_calls(
        *(fake.call("write_file", {"path": f"{i}.txt", "content": f"text {i}"}, id=i) for i in ids)
    )


def agents_of(agent: AgentHarness, via: str | None = None) -> AgentClient:
    return AgentClient(agent.client, task_queue=agent.task_queue, via=via)


async def started(agents: AgentClient, prompt: str = "write it") -> RunHandle:
    return await agents.start(None, prompt, id=f"client-{uuid.uuid4().hex[:10]}", tools=WRITE)


async def test_approve_with_the_digest_then_the_typed_result_and_events(
    agent: AgentHarness,
) -> None:
    """The sample's flow: the request that waits, approved with its digest (its first 12 hex
    digits, as people copy it), the typed result, and the event stream from its start and
    resumed after an offset: the same events, none missed or repeated."""
    agent.fake.enqueue(writes("w1"), fake.text("Saved."))
    agents = agents_of(agent)
    run = await started(agents)
    request = await run.next_request()
    assert request is not None
    assert (request.call_id, request.tool) == ("w1", "write_file")
    assert request.args["path"] == "w1.txt"
    decision = await run.approve(request.call_id, digest=request.args_digest[:12], by="alice")
    assert (decision.outcome, decision.by) == ("approved", "alice")
    assert decision.args_digest == request.args_digest
    result = await run.result()
    assert (result.answer, result.stop_reason) == ("Saved.", "completed")
    assert [(s.tool, s.status) for s in result.steps] == [("write_file", "ok")]
    assert (agent.workspace / "w1.txt").read_text() == "text w1"
    assert await run.next_request() is None  # the run has ended: nothing will wait

    events = [event async for event in run.events()]
    assert events[0].type == "run_started" and events[-1].type == "run_finished"
    assert [e.offset for e in events] == list(range(len(events)))
    middle = events[len(events) // 2].offset
    assert middle is not None
    resumed = [event async for event in run.events(after=middle)]
    assert resumed == events[middle + 1 :]


async def test_a_digest_of_other_arguments_is_refused_and_an_edit_is_bound_to_it(
    agent: AgentHarness,
) -> None:
    """A digest that names other arguments approves nothing (`DigestMismatch`, the call still
    waits); an edit approved with the right digest runs with the edited arguments."""
    agent.fake.enqueue(writes("w1"), fake.text("Saved elsewhere."))
    run = await started(agents_of(agent))
    request = await run.next_request()
    assert request is not None
    with pytest.raises(DigestMismatch, match="not the ones shown with args_digest 000000000000"):
        await run.approve("w1", digest="0" * 12)
    with pytest.raises(InvalidInput, match="args_digest"):
        await run.approve("w1", digest="not hex")
    assert [p.call_id for p in await run.pending()] == ["w1"]  # nothing was decided
    edited = {"path": "edited.txt", "content": "edited"}
    decision = await run.approve("w1", digest=request.args_digest, edit=edited)
    assert decision.outcome == "edited"
    assert decision.executed_args is not None
    assert decision.executed_args["path"] == "edited.txt"
    assert (await run.result()).answer == "Saved elsewhere."
    assert (agent.workspace / "edited.txt").read_text() == "edited"
    assert not (agent.workspace / "w1.txt").exists()


async def test_a_call_decided_twice_or_never_asked_is_a_typed_refusal(
    agent: AgentHarness,
) -> None:
    """Rejecting a call again is `AlreadyDecided`; a call id that never waited is
    `CallNotFound`; replying to an approval is `DecisionRefused`. Each names its cause; the
    other call still waits, untouched."""
    agent.fake.enqueue(writes("w1", "w2"), fake.text("Done."))
    run = await started(agents_of(agent))
    assert (await run.next_request()) is not None
    rejected = await run.reject("w1", reason="not that file", by="bob")
    assert (rejected.outcome, rejected.reason) == ("rejected", "not that file")
    with pytest.raises(AlreadyDecided) as again:
        await run.reject("w1", reason="still no")
    assert again.value.call_id == "w1" and "no pending call 'w1'" in str(again.value)
    with pytest.raises(CallNotFound) as unknown:
        await run.approve("nope", digest="a" * 64)
    assert unknown.value.call_id == "nope" and "'nope'" in str(unknown.value)
    with pytest.raises(DecisionRefused, match="waits for an approval"):
        await run.reply("w2", "yes")
    request = await run.next_request()  # w1 was answered by this handle: w2 is next
    assert request is not None and request.call_id == "w2"
    await run.approve("w2", digest=request.args_digest)
    result = await run.result()
    assert [(s.call_id, s.status) for s in result.steps] == [("w1", "rejected"), ("w2", "ok")]
    # after the end: a call decided before it is AlreadyDecided (whether the second answer
    # came before or after the end), any other answer is RunEnded
    with pytest.raises(AlreadyDecided, match="'w2' was decided before the run ended"):
        await run.approve("w2", digest=request.args_digest)
    with pytest.raises(RunEnded, match="has already ended"):
        await run.approve("w3", digest=request.args_digest)


async def test_unknown_runs_invalid_input_and_runs_of_other_servers(agent: AgentHarness) -> None:
    """No run by that id is `RunNotFound`; a bad setting or an unknown agent is `InvalidInput`
    naming it, and nothing starts; a client serving one kind of server (`via`) cannot reach a
    run another started (`NotStartedHere`)."""
    agents = agents_of(agent)
    with pytest.raises(RunNotFound, match="no run with workflow id 'no-such-run'"):
        await agents.run("no-such-run").pending()
    with pytest.raises(RunNotFound):
        await agents.open_run("no-such-run")
    with pytest.raises(InvalidInput, match="max_iterations"):
        await agents.start(None, "hi", max_iterations=0)
    with pytest.raises(InvalidInput, match="unknown agent 'nope'; agents: assistant"):
        await agents.start("nope", "hi")
    agent.fake.enqueue(writes("w1"))
    run = await started(agents)
    with pytest.raises(NotStartedHere, match="was not started through the MCP gateway"):
        await agents_of(agent, via="mcp").run(run.id).pending()
    assert await run.next_request() is not None
    await run.cancel()
    with pytest.raises(RunFailedError) as failed:
        await run.result()
    assert failed.value.outcome.ending == "cancelled"


async def test_a_session_takes_a_message_and_streams_its_turn(agent: AgentHarness) -> None:
    """`session(id).send(...)` starts the session with its first message and returns the
    turn's answer; its events carry the turn; a second message is a second turn."""
    agents = agents_of(agent)
    session = agents.session(f"session-{uuid.uuid4().hex[:10]}")
    agent.fake.enqueue(fake.text("hi there"))
    first = await session.send("hello", by="carol")
    assert (first.turn, first.answer) == (1, "hi there")
    agent.fake.enqueue(fake.text("again"))
    second = await session.send("and again?")
    assert (second.turn, second.answer) == (2, "again")
    assert await session.pending() == []
    status = await session.status()
    assert status.turns == 2
    await session.end(by="carol")
    types = [event.type async for event in session.events()]
    assert types.count("turn_started") == 2 and types[-1] == "session_ended"


async def test_agent_run_names_an_agent_of_the_catalog_as_start_does(
    agent: AgentHarness, temporal_env: WorkflowEnvironment
) -> None:
    """`agent run --agent researcher` maps onto `AgentClient.start("researcher", ...)`: the
    profile's instructions and tools, the other options on top, marked as started by the CLI;
    an unknown name is refused naming the agents there are, and nothing starts."""
    cli = AgentCli.of(agent, temporal_env)
    workflow_id = f"cli-agent-{uuid.uuid4().hex[:8]}"
    agent.fake.enqueue(fake.text("Found it."))
    done = await cli(
        "run", "Find the answer", "--agent", "researcher", "--max-iterations", "3",
        "--id", workflow_id, "--no-wait", "--json",
    )  # fmt: skip
    assert done.code == 0, done
    run = AgentClient(agent.client).run(workflow_id)
    assert (await run.result()).answer == "Found it."
    system = agent.fake.requests[0].body["messages"][0]
    assert system["role"] == "system" and RESEARCHER.system_prompt in system["content"]
    memo = await (await run.describe()).memo()
    assert memo["started_via"] == "cli"
    unknown = await cli("run", "hi", "--agent", "nope", "--id", f"{workflow_id}-2")
    assert unknown.one_error_line() == (
        "agent: unknown agent 'nope'; agents: assistant, researcher"
    )
    with pytest.raises(RunNotFound):
        await AgentClient(agent.client).run(f"{workflow_id}-2").describe()
