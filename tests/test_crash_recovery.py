"""Kill -9 the worker process mid-run; a new worker process finishes every run, and nothing that
completed is done again.

Real `python worker.py` processes (loading `testkit.crash_tools`) against the session's Temporal
dev server and the fake model server. Each test kills one worker with SIGKILL at a chosen point:
during a model call, during a tool call (before and after the tool's side effect), and while the
run waits for a person. What a new worker then re-executes is counted at the fake model server
(model requests) and in the tool's record files (starts, effects, skips).

Recovery takes a while by design: Temporal retries a killed activity only when its timeout
expires (`model_timeout_seconds` = 3 in these runs; `crash_effect` has a 2 s heartbeat timeout),
and the dead worker's *sticky* workflow task queue holds the next workflow task for the SDK's
default 10 s before any worker may take it.
"""

from __future__ import annotations

from typing import Any

import pytest

from durable_agents.testing import fake_openai as fake
from durable_agents.testing.fake_openai import FakeOpenAIServer
from testkit.crash_tools import (
    WorkerCluster,
    attempts_of,
    counts,
    killed_in_the_second_call,
    recorded,
)
from testkit.eventually import eventually
from tests.conftest import activity_types
from tests.hitl_support import wait_for_pending


async def test_kill_during_a_model_call(
    cluster: WorkerCluster, fake_model: FakeOpenAIServer
) -> None:
    killed_in_the_second_call(fake_model)
    first = await cluster.start_worker()
    handle = await cluster.start_run(
        {
            "prompt": "model crash",
            "tools": ["crash_effect"],
            "model_timeout_seconds": 3,
            "model_max_attempts": 3,
        }
    )
    await eventually(lambda: fake_model.request_count == 2, what="the second model call")
    key = f"{handle.id}/1/c1"
    assert counts(cluster.records, key) == {"start": 1, "effect": 1, "finish": 1}

    await cluster.kill(first)
    await cluster.start_worker()
    result = await cluster.result_of(handle)

    assert result.answer == "done after the crash"
    assert result.stop_reason == "completed"
    assert [s.observation for s in result.steps] == ["did a"]
    # Turn 1 and the tool are not asked again; only the killed model call is retried once.
    assert fake_model.request_count == 3
    assert fake_model.pending_replies == 0
    assert counts(cluster.records, key) == {"start": 1, "effect": 1, "finish": 1}
    # The tool ran once, on its first attempt, before the crash; nothing re-ran it.
    assert (await activity_types(handle)).count("crash_effect") == 1
    assert await attempts_of(handle, "crash_effect") == [1]
    assert fake_model.errors == []


@pytest.mark.parametrize(
    ("where", "args", "kill_after", "expected"),
    [
        (
            "before the effect",
            {"label": "b", "hold_before": 120},
            "start",
            {"start": 2, "effect": 1, "finish": 1},
        ),
        (
            "after the effect",
            {"label": "b", "hold_after": 120},
            "effect",
            {"start": 2, "effect": 1, "skip": 1, "finish": 1},
        ),
    ],
)
async def test_kill_during_a_tool_call(
    cluster: WorkerCluster,
    fake_model: FakeOpenAIServer,
    where: str,
    args: dict[str, Any],
    kill_after: str,
    expected: dict[str, int],
) -> None:
    fake_model.enqueue(
        fake.tool_calls(fake.call("crash_effect", args, id="c1")),
        fake.text("done after the crash"),
    )
    first = await cluster.start_worker()
    handle = await cluster.start_run({"prompt": f"tool crash {where}", "tools": ["crash_effect"]})
    key = f"{handle.id}/1/c1"
    await eventually(recorded(cluster.records, key, kill_after), what=f"the tool's {kill_after}")

    await cluster.kill(first)
    assert "finish" not in counts(cluster.records, key)  # it really was mid-execution
    await cluster.start_worker()
    result = await cluster.result_of(handle)

    assert result.answer == "done after the crash"
    assert [(s.tool, s.status, s.observation) for s in result.steps] == [
        ("crash_effect", "ok", "did b")
    ]
    # The tool started again on the new worker, but its effect happened exactly once.
    assert counts(cluster.records, key) == expected
    assert fake_model.request_count == 2
    # One tool activity, completed by its second attempt (the first died with the worker).
    assert (await activity_types(handle)).count("crash_effect") == 1
    assert await attempts_of(handle, "crash_effect") == [2]
    assert fake_model.errors == []


async def test_kill_while_waiting_for_approval(
    cluster: WorkerCluster, fake_model: FakeOpenAIServer
) -> None:
    fake_model.enqueue(
        fake.tool_calls(fake.call("crash_effect", {"label": "c", "approval": True}, id="c1")),
        fake.text("approved and done"),
    )
    first = await cluster.start_worker()
    handle = await cluster.start_run({"prompt": "approval crash", "tools": ["crash_effect"]})
    pending = await wait_for_pending(handle, timeout=30)
    assert [p.call_id for p in pending] == ["c1"]

    await cluster.kill(first)
    # The decision arrives while no worker runs at all; the server keeps it in history.
    await handle.signal("approve", {"call_id": "c1", "by": "tester"})
    await cluster.start_worker()
    result = await cluster.result_of(handle)

    assert result.answer == "approved and done"
    step = result.steps[0]
    assert (step.status, step.observation) == ("ok", "did c")
    assert step.human is not None
    assert (step.human.outcome, step.human.by) == ("approved", "tester")
    key = f"{handle.id}/1/c1"
    assert counts(cluster.records, key) == {"start": 1, "effect": 1, "finish": 1}
    assert fake_model.request_count == 2
    assert await attempts_of(handle, "crash_effect") == [1]
    assert fake_model.errors == []
