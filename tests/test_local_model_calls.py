"""Model calls as local activities (`model_call: local`, issue 36 part 2): each `call_model` runs
in the worker running the run, recorded as one `MarkerRecorded` event, never scheduled on the
server. What it keeps: the run's answer, usage and event stream (the reply's text whole in
`model_call_finished`, since nothing streams), a cancel that reaches the call, a run that a
killed worker leaves finishing on another, replay (tests/histories/local_model.json). Real dev
server, real worker, the real `openai` client against the fake model server; the killed worker
is a `python worker.py` subprocess.

A local activity holds its run's workflow task: a cancel reaches the run at the task's next
heartbeat (80% of the workflow task timeout) or when the call ends, and a dead worker's run moves
on when that task times out. These runs are started with a 2 s workflow task timeout so that
both happen in about 2 s, not the default 8-10 s.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from durable_agents.agent import Agent
from durable_agents.cli.commands import build_input
from durable_agents.cli.main import build_parser
from durable_agents.client.run_input import profile_settings
from durable_agents.contracts.agent_input import AgentInput
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agents import AgentProfile, ParentLink
from durable_agents.contracts.errors import MODEL_CALL_FAILED
from durable_agents.contracts.scratchpad import Scratchpad
from durable_agents.runtime.event_stream import read_events
from durable_agents.servers.http_api.bodies import StartRun
from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from durable_agents.workflows.delegation import child_input
from testkit.crash_tools import WorkerCluster, killed_in_the_second_call
from testkit.eventually import eventually
from tests.conftest import AgentHarness, activity_types, local_activities
from tests.session_support import echo_model, send_with_start
from tests.test_cancellation import cancel_and_wait

TASK_TIMEOUT = timedelta(seconds=2)
ANSWER = "Six times seven is 42, worked out by the calculator."


async def start(
    agent: AgentHarness | WorkerCluster, payload: dict[str, Any], queue: str
) -> WorkflowHandle[Any, AgentResult]:
    return await agent.client.start_workflow(
        "AgentWorkflow",
        payload,
        id=f"local-{uuid.uuid4()}",
        task_queue=queue,
        task_timeout=TASK_TIMEOUT,
        result_type=AgentResult,
    )


async def event_types(handle: WorkflowHandle[Any, Any]) -> list[EventType.ValueType]:
    return [e.event_type for e in (await handle.fetch_history()).events]


def test_the_setting_is_per_run_and_per_agent_and_off_by_default() -> None:
    assert AgentInput(prompt="x").model_call == "activity"
    assert "model_call" not in AgentInput(prompt="x").model_dump(mode="json")  # old JSON unchanged
    fast = Agent("router", instructions="Route.", model_call="local")
    assert fast.input("x").model_call == "local"
    assert fast.input("x", model_call="activity").model_call == "activity"  # the run's wins
    with pytest.raises(ValueError, match="model_call"):
        Agent("bad", instructions="x", model_call="inline")


async def test_a_local_run_records_markers_and_no_model_activity(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("calculator", {"expression": "6*7"}, id="c1")),
        fake.streamed(ANSWER, piece_seconds=0.02, piece_chars=8),
    )
    payload = {"prompt": "6*7?", "tools": ["calculator"], "model_call": "local"}
    handle = await start(agent, payload, agent.task_queue)
    result = await handle.result()

    assert (result.answer, result.stop_reason) == (ANSWER, "completed")
    assert [s.observation for s in result.steps] == ["42"]
    assert [c.turn for c in result.model_calls] == [1, 2]
    assert result.usage.total_tokens > 0
    # Every model call is a local activity marker; none is scheduled on the server.
    assert "call_model" not in await activity_types(handle)
    calls = [summary for kind, summary in await local_activities(handle) if kind == "call_model"]
    assert calls == ["default model · turn 1", "default model · turn 2"]  # the Web UI's label
    # The reply streamed from the provider, but nothing of it was published while it ran (no
    # publish signal in history): the whole text comes with the workflow's model_call_finished.
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED not in await event_types(handle)
    events, _ = await read_events(agent.client, handle.id)
    assert not [e for e in events if e.type in ("text_delta", "reasoning_delta")]
    started = [e.model_call for e in events if e.type == "model_call_started"]
    finished = {e.model_call: e for e in events if e.type == "model_call_finished"}
    assert started == [1, 2] and sorted(finished) == [1, 2]
    assert finished[2].text == ANSWER


async def test_a_failed_local_call_is_retried_and_reads_like_an_activity_failure(
    agent: AgentHarness,
) -> None:
    agent.fake.enqueue(fake.error(503), fake.text("after one retry"))
    payload = {"prompt": "x", "model_call": "local", "model_max_attempts": 2}
    handle = await start(agent, payload, agent.task_queue)
    assert (await handle.result()).answer == "after one retry"
    assert agent.fake.request_count == 2  # the retry (a 1 s backoff) waited in the worker

    agent.fake.enqueue(fake.error(400, "context too long"))
    handle = await start(agent, payload, agent.task_queue)
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    failure = caught.value.cause
    assert isinstance(failure, ApplicationError) and failure.type == MODEL_CALL_FAILED
    assert failure.message.startswith("model call failed at turn 1: ")
    assert "context too long" in failure.message
    assert agent.fake.request_count == 3  # a rejected request is not retried


async def test_a_cancel_reaches_a_running_local_model_call(agent: AgentHarness) -> None:
    long_reply = "word " * 400
    agent.fake.enqueue(fake.streamed(long_reply, piece_seconds=0.05, piece_chars=5))  # 20 s
    handle = await start(agent, {"prompt": "x", "model_call": "local"}, agent.task_queue)
    await eventually(lambda: agent.fake.chunks_sent > 3, what="the reply to be streaming")

    await cancel_and_wait(handle)
    # The cancel waits for the workflow task's heartbeat (0.8 x the 2 s task timeout), then the
    # call itself is cancelled in the worker: the provider's stream is abandoned. Checked by
    # order, not a clock: the run ended cancelled while the 20 s reply was still streaming.
    sent = agent.fake.chunks_sent
    await asyncio.sleep(0.5)
    assert agent.fake.chunks_sent - sent <= 1 and sent < 400
    assert "call_model" not in await activity_types(handle)
    assert (await event_types(handle))[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED


@pytest.mark.slow
async def test_a_worker_killed_during_a_local_call_leaves_the_run_to_another(
    cluster: WorkerCluster, fake_model: FakeOpenAIServer
) -> None:
    killed_in_the_second_call(fake_model)
    first = await cluster.start_worker()
    payload = {"prompt": "local crash", "tools": ["crash_effect"], "model_call": "local"}
    handle = await start(cluster, payload, cluster.task_queue)
    await eventually(lambda: fake_model.request_count == 2, what="the second model call")

    await cluster.kill(first)
    await cluster.start_worker()
    result = await cluster.result_of(handle)

    assert result.answer == "done after the crash"
    assert [s.observation for s in result.steps] == ["did a"]
    # The killed call is asked again by the new worker (its workflow task timed out, the
    # call's marker was never recorded); turn 1 is not asked again, the tool not run again.
    assert fake_model.request_count == 3
    scheduled = await activity_types(handle)
    assert "call_model" not in scheduled and scheduled.count("crash_effect") == 1
    # Turn 1; turn 2 on the new worker, whose empty context cache misses the delta (nothing is
    # asked); turn 2 again with the whole conversation.
    calls = [summary for kind, summary in await local_activities(handle) if kind == "call_model"]
    assert calls == [f"default model · turn {n}" for n in (1, 2, 2)]
    types = await event_types(handle)
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT in types
    assert fake_model.errors == []


def test_the_cli_and_the_http_api_take_the_setting() -> None:
    args = build_parser().parse_args(["run", "x", "--model-call", "local"])
    assert build_input(args)["model_call"] == "local"
    assert "model_call" not in build_input(build_parser().parse_args(["run", "x"]))
    assert StartRun.model_validate({"prompt": "x", "model_call": "local"}).workflow_input() == {
        "prompt": "x",
        "model_call": "local",
    }


def test_an_agent_profile_sets_it_for_its_runs_and_sub_agent_calls() -> None:
    router = Agent("router", instructions="Route.", model_call="local").profile()
    assert router.model_call == "local" and profile_settings(router)["model_call"] == "local"
    link = ParentLink(workflow_id="w", call_key="k")
    pad = Scratchpad(messages=[])
    parent = AgentInput(prompt="p")
    assert child_input(parent, pad, router, "t", link).model_call == "local"  # the agent's own
    plain = AgentProfile(name="plain", description="d", system_prompt="s")
    assert "model_call" not in profile_settings(plain)
    local_parent = AgentInput(prompt="p", model_call="local")
    assert child_input(local_parent, pad, plain, "t", link).model_call == "local"  # inherited
    assert child_input(parent, pad, plain, "t", link).model_call == "activity"


async def test_a_session_turn_makes_its_model_calls_locally(agent: AgentHarness) -> None:
    agent.fake.set_handler(echo_model)
    session = {"agent": {"model_call": "local"}}
    sid = f"local-session-{uuid.uuid4()}"
    result, handle = await send_with_start(agent.client, sid, agent.task_queue, "hi", session)
    assert result.answer == "answer to: hi"
    assert "call_model" not in await activity_types(handle)
    assert [kind for kind, _ in await local_activities(handle)].count("call_model") == 1
