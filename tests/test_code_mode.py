"""Code mode (`code_mode: true`): the model gets one tool, `run_code`; its script calls the
run's tools as async functions in the real pydantic-monty sandbox, stepped by activities, and
each call still goes through the run's governed path. Against the real Temporal dev server and
the real worker, with the scripted model."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.code_mode import CodeLimits, ScriptCall
from durable_agents.contracts.model_io import ToolSchema
from durable_agents.loop import code_mode
from tests import agent_test_tools
from tests import scripted_model as sm
from tests.conftest import FAKE_MODEL, ScriptedHarness, started_workers
from tests.hitl_support import wait_for_pending

PARALLEL = """
import asyncio
words = ["alpha", "beta", "gamma"]
said = await asyncio.gather(*[echo(text=w) for w in words])
print("said:", ", ".join(said))
total = await calculator(expression="2 + 3")
len(said) + int(total)
"""


def run_code(script: str, call_id: str = "s1") -> sm.Reply:
    return sm.tool_calls(sm.call("run_code", {"code": script}, id=call_id))


async def scheduled(handle: WorkflowHandle[Any, Any]) -> Counter[str]:
    history = await handle.fetch_history()
    return Counter(
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    )


async def observation_of(harness: ScriptedHarness, script: str, **settings: Any) -> str:
    harness.model.enqueue(run_code(script), sm.text("done"))
    result, _ = await harness.run(
        {"prompt": "go", "tools": ["echo", "calculator"], "code_mode": True, **settings}
    )
    [step] = result.steps
    assert step.tool == "run_code"
    return step.observation


async def test_a_script_calls_tools_in_parallel_and_its_output_is_the_observation(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(run_code(PARALLEL), sm.text("Said three words; 8."))
    result, handle = await scripted_agent.run(
        {"prompt": "Echo three words, then add", "tools": ["echo", "calculator"], "code_mode": True}
    )

    assert result.answer == "Said three words; 8."
    [step] = result.steps
    assert (step.tool, step.status) == ("run_code", "ok")
    assert step.observation == "said: alpha, beta, gamma\n8"
    [offered] = scripted_agent.model.requests[0].tools  # one tool, with the signatures
    assert offered.name == "run_code"
    assert "async def echo(*, text: str) -> str:" in offered.description
    assert "async def calculator(*, expression: str) -> str:" in offered.description
    assert scripted_agent.model.requests[1].messages[-1].content == step.observation
    kinds = await scheduled(handle)
    assert kinds["echo"] == 3  # each call of the script is the tool's own activity
    assert kinds["run_script_step"] == 3  # start; after the gather; after the calculator


@pytest.mark.parametrize(
    ("script", "settings", "expected"),
    [
        ("await nope(x=1)", {}, "Error: the script does not type-check, so nothing ran:"),
        ("await echo(words=1)", {}, "Argument `words` does not match any known parameter"),
        ("x = = 1", {}, "Error: the script does not type-check"),
        ("import requests", {}, "Cannot resolve imported module `requests`"),
        ('import os\nos.listdir("/")', {}, "PermissionError"),
        ("while True:\n    pass", {"code_limits": {"max_compute_seconds": 0.5}},
         "Error: the script computed for more than 0.5s without calling a tool (the limit)"),
        ("x = []\nwhile True:\n    x.append('a' * 100000)", {"code_limits": {"max_memory_mb": 16}},
         "Error: the script used more than 16 MB of memory (the limit)"),
        ('for i in range(5):\n    await echo(text=str(i))', {"code_limits": {"max_tool_calls": 3}},
         "Error: the script made more than 3 tool calls (the limit)"),
        ('print("before")\nraise ValueError("boom")', {}, "ValueError: boom"),
    ],
)  # fmt: skip
async def test_bad_scripts_get_a_clear_observation(
    scripted_agent: ScriptedHarness, script: str, settings: dict[str, Any], expected: str
) -> None:
    observation = await observation_of(scripted_agent, script, **settings)
    assert expected in observation, observation


async def test_output_of_a_script_that_fails_is_kept(scripted_agent: ScriptedHarness) -> None:
    observation = await observation_of(
        scripted_agent, 'a = await echo(text="one")\nprint(a)\nraise ValueError("boom")'
    )
    assert observation.startswith("one\nError: the script raised an exception:")
    assert observation.rstrip().endswith("ValueError: boom")


async def test_calls_from_a_script_are_governed_and_screened(
    scripted_agent: ScriptedHarness,
) -> None:
    policy = {"rules": [{"tools": "calculator", "action": "deny"}]}
    observation = await observation_of(
        scripted_agent,
        'print(await calculator(expression="1+1"))\n'
        'for i in range(4):\n    print(await echo(text="same"))',
        approval_policy=policy,
    )
    lines = observation.splitlines()
    assert lines[0].startswith("Error:") and "calculator" in lines[0]  # denied, never run
    assert lines[1:3] == ["same", "same"]
    assert "already" in lines[3] or "repeat" in lines[3].lower(), observation  # the warning
    assert lines[-1] == "Error: the script repeated calls of echo too often; it was stopped"


async def test_a_call_needing_approval_waits_and_survives_a_worker_restart(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The script echoes, then a side effect waits for approval; the worker goes away and a new
    one replays the run: the echo is not run again, the side effect runs once, once approved."""
    model = sm.ScriptedChatModel(default_model=FAKE_MODEL)
    script = 'print(await echo(text="first"))\nprint(await side_effect(label="payment"))\n"end"'
    model.enqueue(run_code(script, "s9"), sm.text("finished"))
    queue = f"code-restart-{uuid.uuid4()}"
    client = temporal_env.client
    async with AsyncExitStack() as stack:
        await started_workers(stack, client, model, tmp_path, task_queue=queue)
        handle = await client.start_workflow(
            "AgentWorkflow",
            {"prompt": "go", "tools": ["echo", "side_effect"], "code_mode": True},
            id=f"code-restart-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )
        [request] = await wait_for_pending(handle)
    assert (request.call_id, request.tool, request.args) == (
        "s9.2",
        "side_effect",
        {"label": "payment"},
    )
    async with AsyncExitStack() as stack:
        await started_workers(stack, client, model, tmp_path, task_queue=queue)
        await handle.signal("approve", {"call_id": "s9.2", "by": "bob"})
        result = await handle.result()
    [step] = result.steps
    assert step.observation == "first\ndid payment\nend"
    kinds = await scheduled(handle)
    assert (kinds["echo"], kinds["side_effect"], kinds["run_script_step"]) == (1, 1, 3)
    scope = handle.id
    ran = {k: v for k, v in agent_test_tools.executions.items() if k.startswith(f"{scope}/")}
    assert sorted(ran.values()) == [1, 1], ran  # each call ran exactly once


def test_signatures_calls_and_observations_alone() -> None:
    schema = ToolSchema(
        name="lookup",
        description='Find "things".',
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer"},
                "bad-name": {"type": "string"},
                "tags": {"anyOf": [{"type": "array"}, {"type": "null"}]},
            },
            "required": ["query"],
        },
    )
    assert code_mode.signature(schema) == (
        "async def lookup(*, query: str, limit: int | None = None, "
        "tags: list[Any] | None = None, **more: Any) -> str:\n"
        '    """Find "things"."""\n    ...\n'
    )
    odd = ToolSchema(name="has-dash", description="x", parameters={"type": "object"})
    assert code_mode.script_tools([schema, odd]) == [schema]
    requests = code_mode.script_requests(
        "c1",
        [
            ScriptCall(id=0, function="lookup", keywords={"query": "q"}),
            ScriptCall(id=1, function="lookup", positional=["q"]),
        ],
    )
    [(number, call)] = requests.calls
    assert (number, call.id, call.name, json.loads(call.arguments)) == (
        0,
        "c1.1",
        "lookup",
        {"query": "q"},
    )
    assert requests.failed == {1: "lookup() takes keyword arguments only"}
    assert code_mode.script_observation("hi\n", "3", None) == "hi\n3"
    assert code_mode.script_observation("", None, "boom") == "Error: boom"
    assert code_mode.script_value([1, "a"]) == "[1, 'a']"
    limits = CodeLimits()
    assert code_mode.limit_error("MemoryError: memory limit exceeded", limits) is not None
    assert code_mode.limit_error("ValueError: x", limits) is None
