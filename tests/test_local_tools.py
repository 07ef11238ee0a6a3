"""Local tools (`ToolOptions.local`): a cheap, pure, idempotent tool runs as a Temporal local
activity in the workflow's worker. What must not change: every call is still in the history (a
`MarkerRecorded` event with the call's summary), a failure reads exactly as it does from a
regular activity, a timeout is still a timeout, a cancellation still reaches the tool, and the
run replays. What is refused: a tool that needs a person, runs on another task queue or keeps
data per user never becomes local. Real worker and dev server, scripted model; each local test
tool is a twin of a regular one (`tests.agent_test_tools.local_twin`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError, RetryState, TimeoutType
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

import durable_agents.activities.tool_activities as tool_activities
from durable_agents.contracts.errors import TOOL_ERROR, TOOL_FAILED_RUN
from durable_agents.tools.catalog import REGISTRY
from durable_agents.tools.definition import ToolOptions, tool
from durable_agents.workflows.callees.activity import tool_failure
from durable_agents.workflows.callees.local_tool import local_activity_error
from testkit.eventually import eventually
from tests import scripted_model as sm
from tests.agent_test_tools import executions
from tests.conftest import ScriptedHarness, activity_types, local_activities
from tests.replaying import assert_replays
from tests.test_cancellation import cancel_and_wait

# --- definitions ------------------------------------------------------------------------------


class NoArgs(BaseModel):
    pass


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"requires_approval": True}, "requires_approval"),
        ({"requires_approval": lambda args: False}, "requires_approval"),
        ({"task_queue": "gpu"}, "task_queue"),
        ({"requires_scope": True}, "requires_scope"),
    ],
)
def test_local_is_refused_with_what_may_have_side_effects_or_run_elsewhere(
    options: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=f"local=True .* cannot be combined with {named}"):
        ToolOptions(local=True, **options)
    with pytest.raises(ValueError, match=named):  # through the decorator too, at definition
        tool(local=True, **options)
    ToolOptions(local=False, **options)  # the same options on a regular tool are fine


def test_every_clash_is_named_at_once() -> None:
    with pytest.raises(ValueError) as caught:
        ToolOptions(local=True, requires_approval=True, task_queue="gpu", requires_scope=True)
    assert all(n in str(caught.value) for n in ("requires_approval", "task_queue", "scope"))


def test_the_decorator_passes_local_on() -> None:
    @tool(local=True, start_to_close_timeout=timedelta(seconds=2))
    async def double(args: NoArgs) -> str:
        """Twice nothing."""
        return "0"

    assert double.options.local and double.options.start_to_close_timeout.total_seconds() == 2
    assert not ToolOptions().local  # off unless a tool opts in


# --- a failed local activity reads like a failed activity ----------------------------------------


def test_a_local_failure_is_wrapped_as_an_activity_failure_would_be() -> None:
    options = ToolOptions(retry_policy=RetryPolicy(non_retryable_error_types=["ValueError"]))
    refused = ApplicationError("no", type=TOOL_ERROR, non_retryable=True)
    policy_refused = ApplicationError("ValueError: bad", type="ValueError")
    used_up = ApplicationError("ConnectionError: reset", type="ConnectionError")
    timed_out = TemporalTimeoutError(
        "late", type=TimeoutType.START_TO_CLOSE, last_heartbeat_details=[]
    )
    states = [
        local_activity_error("t", failure, options).retry_state
        for failure in (refused, policy_refused, used_up, timed_out)
    ]
    assert states == [
        RetryState.NON_RETRYABLE_FAILURE,
        RetryState.NON_RETRYABLE_FAILURE,
        RetryState.MAXIMUM_ATTEMPTS_REACHED,
        RetryState.TIMEOUT,
    ]
    error = local_activity_error("t", used_up, options)
    assert error.cause is used_up and error.activity_type == "t"
    assert tool_failure(error, options).kind == "retries_exhausted"


# --- runs ----------------------------------------------------------------------------------------


async def markers(handle: Any) -> list[str]:
    """The run's markers but patches' (every new run records one: `agent-definition-once`)."""
    return [
        e.marker_recorded_event_attributes.marker_name
        for e in (await handle.fetch_history()).events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name != "core_patch"
    ]


async def test_local_calls_are_markers_with_their_summaries(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("local_echo", {"text": "a"}, id="a"),
            sm.call("local_echo", {"text": "b"}, id="b"),
        ),
        sm.tool_calls(sm.call("local_echo", {"text": "c"}, id="c")),
        sm.text("abc"),
    )
    result, handle = await scripted_agent.run({"prompt": "x", "tools": ["local_echo"]})

    assert [(s.call_id, s.observation, s.status) for s in result.steps] == [
        ("a", "a", "ok"),
        ("b", "b", "ok"),
        ("c", "c", "ok"),
    ]
    assert await activity_types(handle) == ["call_model", "call_model", "call_model"]
    recorded = await local_activities(handle)  # (a and b ran in parallel: either may be first)
    assert sorted(recorded[:2]) == [
        ("local_echo", '{"text": "a"}'),
        ("local_echo", '{"text": "b"}'),
    ]
    assert recorded[2:] == [("local_echo", '{"text": "c"}')]
    assert await markers(handle) == ["core_local_activity"] * 3  # one marker per call


async def test_a_run_without_local_tools_records_no_marker(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(sm.tool_calls(sm.call("echo", {"text": "hi"})), sm.text("hi"))
    _, handle = await scripted_agent.run({"prompt": "x", "tools": ["echo"]})
    assert await markers(handle) == []
    assert await activity_types(handle) == ["call_model", "echo", "call_model"]


TWIN_CASES = [
    pytest.param("echo", {"text": "same"}, id="ok"),
    pytest.param("buggy", {"text": "x"}, id="bug: ValueError"),
    pytest.param("refuses", {"text": "x"}, id="ToolError"),
    pytest.param("sleepy", {"seconds": 3}, id="timeout"),
    pytest.param("always_fails", {"text": "x"}, id="retries used up"),
    pytest.param("blips", {"failures": 2}, id="transient, then ok"),
    pytest.param("blips", {"failures": 5}, id="transient past the policy"),
]


@pytest.mark.parametrize(("name", "args"), TWIN_CASES)
async def test_a_local_tool_answers_the_model_as_its_regular_twin_does(
    scripted_agent: ScriptedHarness, name: str, args: dict[str, Any]
) -> None:
    twin = f"local_{name}"
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call(name, args, id="regular"), sm.call(twin, args, id="local")),
        sm.text("done"),
    )
    result, handle = await scripted_agent.run({"prompt": "x", "tools": [name, twin]})

    regular, local = result.steps
    assert (local.observation, local.status) == (regular.observation, regular.status)
    assert await activity_types(handle) == ["call_model", name, "call_model"]
    assert [n for n, _ in await local_activities(handle)] == [twin]


async def test_a_failing_local_tool_set_to_stop_fails_the_run(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(sm.tool_calls(sm.call("local_must_work", {"text": "db"})))
    handle = await scripted_agent.start({"prompt": "go", "tools": ["local_must_work"]})
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == TOOL_FAILED_RUN
    assert cause.message == (
        "tool local_must_work failed and is set to stop the run: Error: critical failure: db"
    )


async def test_a_slow_local_tool_runs_without_heartbeats(
    scripted_agent: ScriptedHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local activity has no heartbeat (the server does not know it): the tool wrapper must
    not send any, or each would fail in the worker's log."""
    wrapped: list[float] = []
    real = tool_activities.with_heartbeats

    def counting(
        work: Awaitable[Any], every: float, details: Callable[[], Any] | None = None
    ) -> Any:
        wrapped.append(every)
        return real(work, every, details)

    monkeypatch.setattr(tool_activities, "with_heartbeats", counting)
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("local_nap", {"seconds": 1.5}), sm.call("echo", {"text": "e"})),
        sm.text("rested"),
    )
    result, _ = await scripted_agent.run({"prompt": "x", "tools": ["local_nap", "echo"]})
    assert [s.observation for s in result.steps] == ["napped 1.5s", "e"]
    assert len(wrapped) == 1  # the regular `echo` only


async def test_a_cancel_reaches_a_running_local_tool(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("local_slow_tool", {"seconds": 60}, id="slow"))
    )
    handle = await scripted_agent.start({"prompt": "x", "tools": ["local_slow_tool"]})
    started = f"started:{handle.id}/1/slow"
    await eventually(lambda: executions[started] == 1, what="the slow local tool to start")

    await cancel_and_wait(handle)
    assert executions[f"cancelled:{handle.id}/1/slow"] == 1  # the tool itself saw the cancel


async def test_an_approval_timeout_that_approves_runs_the_local_tool(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("local_echo", {"text": "42"}, id="c")), sm.text("42")
    )
    result, handle = await scripted_agent.run(
        {
            "prompt": "echo",
            "tools": ["local_echo"],
            "approval_policy": {"rules": [{"tools": "local_echo", "action": "ask"}]},
            "approval_timeout_seconds": 1,
            "approval_timeout_action": "approve",
        }
    )
    [step] = result.steps
    assert step.human is not None and step.human.outcome == "timed_out"
    assert (step.observation, step.status) == ("42", "ok")
    assert await local_activities(handle) == [("local_echo", '{"text": "42"}')]


async def test_a_run_with_local_tools_replays(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("local_refuses", {"text": "x"}, id="a"),
            sm.call("local_blips", {"failures": 1}, id="b"),
            sm.call("echo", {"text": "e"}, id="c"),
        ),
        sm.tool_calls(sm.call("local_echo", {"text": "again"}, id="d")),
        sm.text("done"),
    )
    result, handle = await scripted_agent.run(
        {"prompt": "x", "tools": ["local_refuses", "local_blips", "echo", "local_echo"]}
    )
    assert [s.observation for s in result.steps] == [
        "Error: cannot do that with 'x'",
        "worked on attempt 2",
        "e",
        "again",
    ]
    await assert_replays(await handle.fetch_history())


# --- the built-in calculator ---------------------------------------------------------------------


def test_which_built_in_tools_are_local() -> None:
    """Only the calculator: `current_time` reads the clock (not pure), the file and memory
    tools touch the disk or need approval or a scope."""
    builtin = ["calculator", "current_time", "read_file", "write_file", "ask_user",
               "final_answer", "remember", "recall", "forget"]  # fmt: skip
    local = [name for name in builtin if (item := REGISTRY.get(name)) and item.options.local]
    assert local == ["calculator"]


async def test_calculator_calls_are_markers_with_their_summaries(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("calculator", {"expression": "17 * 25"}, id="a"),
            sm.call("calculator", {"expression": "1/0"}, id="b"),
        ),
        sm.tool_calls(sm.call("calculator", {"expression": "425 + 1024"}, id="c")),
        sm.text("1449"),
    )
    result, handle = await scripted_agent.run({"prompt": "sum", "tools": ["calculator"]})

    assert result.answer == "1449"
    assert [(s.call_id, s.observation, s.status) for s in result.steps] == [
        ("a", "425", "ok"),
        ("b", "Error: division by zero", "error"),  # as from the regular activity
        ("c", "1449", "ok"),
    ]
    assert await activity_types(handle) == ["call_model", "call_model", "call_model"]
    assert await local_activities(handle) == [
        ("calculator", '{"expression": "17 * 25"}'),
        ("calculator", '{"expression": "1/0"}'),
        ("calculator", '{"expression": "425 + 1024"}'),
    ]
