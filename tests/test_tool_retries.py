"""What is retried (seed 003): a tool's own errors go back to the model at once; transient
failures are retried; a tool can opt into retrying everything. Real worker, real Temporal server,
scripted model; the activity attempts are read from the test tools' counters and the history."""

from __future__ import annotations

from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.common import RetryPolicy

from durable_agents.activities.tool_activities import failure_text, is_transient
from durable_agents.contracts.errors import TOOL_ERROR
from durable_agents.tools.definition import (
    TRANSIENT_RETRY,
    ToolError,
    ToolOptions,
    TransientToolError,
)
from tests import agent_test_tools
from tests.conftest import ScriptedHarness, activity_types
from tests.scripted_model import call, text, tool_calls


async def attempts_in_history(handle: object, tool: str) -> list[int]:
    """The attempt number of each completed or failed `tool` activity in the run's history."""
    history = await handle.fetch_history()  # type: ignore[attr-defined]
    scheduled = {
        e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    started = [
        e.activity_task_started_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    return [s.attempt for s in started if scheduled.get(s.scheduled_event_id) == tool]


async def test_a_bug_in_the_tool_goes_to_the_model_at_once(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        tool_calls(call("buggy", {"text": "x"}, id="b1")), text("I will try differently.")
    )
    result, handle = await scripted_agent.run({"prompt": "go", "tools": ["buggy"]})

    [step] = result.steps
    assert (step.status, step.observation) == ("error", "Error: ValueError: cannot parse 'x'")
    key = f"{handle.id}/1/b1"
    assert agent_test_tools.attempts[key] == 1  # ran once: its side effects were not repeated
    assert await attempts_in_history(handle, "buggy") == [1]
    assert await activity_types(handle) == ["call_model", "buggy", "call_model"]


async def test_transient_failures_are_retried_with_the_default_policy(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(tool_calls(call("blips", {"failures": 2}, id="t1")), text("done"))
    result, handle = await scripted_agent.run({"prompt": "go", "tools": ["blips"]})

    [step] = result.steps
    assert (step.status, step.observation) == ("ok", "worked on attempt 3")
    assert agent_test_tools.attempts[f"{handle.id}/1/t1"] == 3
    # Temporal's retries (one scheduled activity, its final attempt 3), not the workflow's.
    assert await activity_types(handle) == ["call_model", "blips", "call_model"]
    assert await attempts_in_history(handle, "blips") == [3]


async def test_transient_failures_past_the_policy_become_an_observation(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(tool_calls(call("blips", {"failures": 5}, id="t2")), text("ok"))
    result, handle = await scripted_agent.run({"prompt": "go", "tools": ["blips"]})

    [step] = result.steps
    assert step.status == "error"
    assert step.observation == (
        "Error: the tool failed after 3 attempts: connection reset on attempt 3"
    )
    assert agent_test_tools.attempts[f"{handle.id}/1/t2"] == TRANSIENT_RETRY.maximum_attempts


async def test_a_tool_that_opts_in_is_retried_for_any_exception(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(tool_calls(call("flaky", {"failures": 2}, id="f1")), text("ok"))
    result, handle = await scripted_agent.run({"prompt": "go", "tools": ["flaky"]})

    assert result.steps[0].observation == "worked on attempt 3"  # RuntimeError, retried
    assert agent_test_tools.attempts[f"{handle.id}/1/f1"] == 3


# --- the rule, unit by unit ------------------------------------------------------------------


class Boom(Exception):
    pass


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (TransientToolError("429"), True),
        (ConnectionResetError("reset"), True),
        (TimeoutError(), True),
        (ValueError("bad"), False),
        (KeyError("k"), False),
        (ToolError("no"), False),
    ],
)
def test_what_counts_as_transient(error: Exception, transient: bool) -> None:
    assert is_transient(error) is transient


def test_http_transport_errors_are_transient() -> None:
    import httpx2

    error = httpx2.ConnectError("connection refused")
    assert is_transient(error)


def test_raising_from_a_transient_error_marks_it_transient() -> None:
    try:
        try:
            raise ConnectionRefusedError("down")
        except ConnectionRefusedError as cause:
            raise Boom("lookup failed") from cause
    except Boom as error:
        assert is_transient(error)


def test_failure_text_names_the_exception() -> None:
    assert failure_text(ValueError("cannot parse")) == "ValueError: cannot parse"
    assert failure_text(KeyError()) == "KeyError"


def test_retry_policies_never_retry_a_tool_error() -> None:
    assert not ToolOptions().retries_everything
    assert ToolOptions().effective_retry_policy.non_retryable_error_types == [TOOL_ERROR]
    own = ToolOptions(
        retry_policy=RetryPolicy(maximum_attempts=7, non_retryable_error_types=["Quota"])
    )
    assert own.retries_everything
    policy = own.effective_retry_policy
    assert policy.maximum_attempts == 7
    assert policy.non_retryable_error_types == ["Quota", TOOL_ERROR]


@pytest.mark.parametrize(
    "field", ["start_to_close_timeout", "heartbeat_timeout", "approval_timeout"]
)
def test_timeouts_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ToolOptions(**{field: timedelta(0)})  # type: ignore[arg-type]
