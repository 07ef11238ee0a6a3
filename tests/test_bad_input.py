"""Hostile and careless input never wedges a run or a session (issue 18).

Each class of bad payload is sent, as raw Temporal payloads the way the CLI, the Web UI's
signal dialog or a careless client would send them, to a run's and a session's start, signals
and updates: no payload, two payloads, a payload that does not decode, deep nesting, invalid
unicode, numbers out of range. A bad start fails the run at once naming the problem; a bad
signal is logged and ignored; a bad update is refused. Afterwards the run still answers its
`status` query and completes, and its history holds no failed workflow task.

Loop logic, so the worker's model is the scripted in-memory one (no HTTP hop).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.errors import INVALID_INPUT
from durable_agents.contracts.session import SessionStatus, TurnResult
from durable_agents.loop.input_shape import MAX_DEPTH
from durable_agents.loop.progress import MAX_QUEUED_STEERING
from tests import scripted_model as sm
from tests.conftest import ScriptedHarness
from tests.hitl_support import wait_for_pending
from tests.session_support import wait_status


def raw_json(data: bytes) -> RawValue:
    """A payload that claims to be JSON and holds exactly `data`."""
    return RawValue(Payload(metadata={"encoding": b"json/plain"}, data=data))


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


BAD_PAYLOADS: dict[str, list[Any]] = {
    "no payload": [],
    "two payloads": [{"call_id": "w1"}, {"call_id": "w1"}],
    "does not decode": [raw_json(b"{not json")],
    "unknown encoding": [RawValue(Payload(metadata={"encoding": b"x/unknown"}, data=b"{}"))],
    "deep nesting, past the decoder's limit": [
        raw_json(b'{"call_id": "w1", "args": ' + nested(5_000) + b"}")
    ],
    "deep nesting, within the decoder's limit": [
        raw_json(b'{"call_id": "w1", "args": {"a": ' + nested(MAX_DEPTH + 5) + b"}}")
    ],
    "invalid unicode": [raw_json(b'{"call_id": "w1", "text": "\\ud800"}')],
    "a number out of range": [raw_json(b'{"call_id": "w1", "args": {"n": 1e400}}')],
    "a huge integer": [raw_json(b'{"call_id": "w1", "args": {"n": ' + b"9" * 40 + b"}}")],
    "not a number": [raw_json(b'{"call_id": "w1", "args": {"n": NaN}}')],
    "not an object": [[1, 2, 3]],
    "too large": [{"call_id": "w1", "comment": "x" * 300_000}],
}


async def workflow_task_failures(handle: WorkflowHandle[Any, Any]) -> list[str]:
    history = await handle.fetch_history()
    return [
        e.workflow_task_failed_event_attributes.failure.message
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]


async def start_failure(harness: ScriptedHarness, workflow: str, args: list[Any]) -> str:
    """Start `workflow` with `args` as its payloads; the run must fail at once: its message."""
    handle = await harness.client.start_workflow(
        workflow, args=args, id=f"bad-{uuid.uuid4()}", task_queue=harness.task_queue
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == INVALID_INPUT, cause
    assert cause.non_retryable
    assert cause.cause is None  # said once: no validation error repeating it as its cause
    assert await workflow_task_failures(handle) == []
    return cause.message


BAD_STARTS: list[tuple[str, list[Any], str]] = [
    ("no payload", [], "no input was sent"),
    (
        "two payloads",
        [{"prompt": "a"}, {"prompt": "b"}],
        "takes one input (a JSON object); 2 were sent",
    ),
    ("does not decode", [raw_json(b'{"prompt": ')], "does not decode as JSON"),
    ("unknown encoding", [RawValue(Payload(metadata={"encoding": b"x/y"}))], "does not decode"),
    ("deep nesting", [raw_json(b'{"prompt": "x", "tools": ' + nested(5_000) + b"}")], "recursion"),
    (
        "deep nesting that decodes",
        [raw_json(b'{"prompt": "x", "output_schema": {"a": ' + nested(40) + b"}}")],
        "output_schema.a" + ".0" * (MAX_DEPTH - 2) + f": nested deeper than {MAX_DEPTH} levels",
    ),
    ("invalid unicode", [raw_json(b'{"prompt": "hi \\ud800"}')], "does not decode as JSON"),
    (
        "a huge integer",
        [raw_json(b'{"prompt": "x", "max_total_tokens": ' + b"1" * 40 + b"}")],
        "max_total_tokens: a number of 130 bits is out of range",
    ),
    (
        "a number past its field's bound",
        [{"prompt": "x", "approval_timeout_seconds": 1e300}],
        "approval_timeout_seconds: Input should be less than or equal to 31622400",
    ),
    (
        "not a number",
        [raw_json(b'{"prompt": "x", "model_timeout_seconds": Infinity}')],
        "model_timeout_seconds: inf is not a finite number",
    ),
    ("a boolean for an integer", [{"prompt": "x", "max_iterations": True}], "max_iterations"),
    ("a string for an integer", [{"prompt": "x", "max_iterations": "5"}], "max_iterations"),
    ("a prompt of only spaces", [{"prompt": "  \n\t \u200b "}], "prompt holds no visible text"),
    ("not an object", [["prompt"]], "expected a JSON object"),
]


async def waiting_run(harness: ScriptedHarness) -> WorkflowHandle[Any, Any]:
    harness.model.enqueue(
        sm.tool_calls(sm.call("write_file", {"path": "a.txt", "content": "hi"}, id="w1")),
        sm.text("done"),
    )
    handle = await harness.start({"prompt": "write it", "tools": ["write_file"]})
    await wait_for_pending(handle)
    return handle


async def test_bad_signals_and_updates_never_wedge_a_waiting_run(
    scripted_agent: ScriptedHarness,
) -> None:
    handle = await waiting_run(scripted_agent)
    for name in ("approve", "reject", "reply", "steer", "child_pending"):
        for args in BAD_PAYLOADS.values():
            await handle.signal(name, args=args)

    for case, args in BAD_PAYLOADS.items():
        for update in ("decide", "steer", "edit_plan"):
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(update, args=args)
            cause = refused.value.cause
            assert isinstance(cause, ApplicationError), (case, update, cause)
            assert cause.message.startswith(f"invalid {update} input: "), (case, cause.message)

    status = await handle.query("status", result_type=AgentStatus)
    assert status.phase == "waiting_for_human" and [p.call_id for p in status.pending] == ["w1"]
    assert status.steering == []  # no bad steer got in
    await handle.signal("approve", {"call_id": "w1", "by": "alice"})
    result = await handle.result()
    assert isinstance(result, AgentResult)
    assert result.answer == "done" and result.steps[0].status == "ok"
    assert (scripted_agent.workspace / "a.txt").read_text() == "hi"
    assert await workflow_task_failures(handle) == []


async def test_the_update_refusal_names_the_problem(scripted_agent: ScriptedHarness) -> None:
    handle = await waiting_run(scripted_agent)
    expected = {
        "no payload": "invalid decide input: no input was sent; expected a JSON object",
        "two payloads": "invalid decide input: update decide takes one input (a JSON object); "
        "2 were sent",
        "deep nesting, within the decoder's limit": "invalid decide input: args.a.",
        "a huge integer": "invalid decide input: args.n: a number of 133 bits is out of range",
        "too large": "invalid decide input: the input has 300",
    }
    for case, start in expected.items():
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update("decide", args=BAD_PAYLOADS[case])
        cause = refused.value.cause
        assert isinstance(cause, ApplicationError) and cause.non_retryable
        assert cause.message.startswith(start), (case, cause.message)
        assert cause.cause is None, (case, cause.cause)  # one message, one retryable state
    await handle.signal("approve", {"call_id": "w1"})
    await handle.result()


async def test_steering_is_bounded_when_it_arrives(scripted_agent: ScriptedHarness) -> None:
    handle = await waiting_run(scripted_agent)
    for index in range(MAX_QUEUED_STEERING):
        await handle.execute_update("steer", {"text": f"note {index}"})
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update("steer", {"text": "one more"})
    assert isinstance(refused.value.cause, ApplicationError)
    assert "the most is 10" in refused.value.cause.message
    for _ in range(20):  # a flood of signals: dropped with a log line, never queued
        await handle.signal("steer", {"text": "y" * 50_000})
    status = await handle.query("status", result_type=AgentStatus)
    assert [s.text for s in status.steering] == [f"note {i}" for i in range(MAX_QUEUED_STEERING)]
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update("steer", {"text": "z" * 50_001})  # one message's limit

    await handle.signal("approve", {"call_id": "w1"})
    await handle.result()
    second_request = scripted_agent.model.requests[-1]
    steered = [m.content or "" for m in second_request.messages if m.role == "user"][1:]
    assert len(steered) == MAX_QUEUED_STEERING and all("note" in m for m in steered)
    assert await workflow_task_failures(handle) == []


async def test_edited_arguments_are_bounded(scripted_agent: ScriptedHarness) -> None:
    handle = await waiting_run(scripted_agent)
    huge = {"path": "a.txt", "content": "x" * 70_000}
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(
            "decide", {"call_id": "w1", "decision": "approve", "args": huge}
        )
    assert isinstance(refused.value.cause, ApplicationError)
    assert "the edited arguments have 70" in refused.value.cause.message
    await handle.signal("approve", {"call_id": "w1", "args": huge})  # logged and ignored
    assert [p.call_id for p in await wait_for_pending(handle)] == ["w1"]
    await handle.signal("approve", {"call_id": "w1"})
    result = await handle.result()
    assert isinstance(result, AgentResult)
    args = result.steps[0].args
    assert args is not None and args["content"] == "hi"


# -- sessions ------------------------------------------------------------------------------------


BAD_SESSION_STARTS: list[tuple[str, list[Any], str]] = [
    ("two payloads", [{}, {}], "takes one input (a JSON object); 2 were sent"),
    ("does not decode", [raw_json(b"{")], "does not decode as JSON"),
    ("deep nesting", [raw_json(b'{"agent": ' + nested(5_000) + b"}")], "recursion"),
    (
        "invalid unicode",
        [raw_json(b'{"agent": {"system_prompt": "\\udfff"}}')],
        "surrogate in hex escape",
    ),
    ("a huge integer", [raw_json(b'{"memory_max_turns": ' + b"7" * 30 + b"}")], "out of range"),
    ("a boolean for an integer", [{"memory_max_turns": True}], "memory_max_turns"),
    ("a forged carry", [{"carry": {"turns": 3}}], "carry: set by the session itself"),
]


STARTS = [("AgentWorkflow", *c) for c in BAD_STARTS] + [
    ("SessionWorkflow", *c) for c in BAD_SESSION_STARTS
]


@pytest.mark.parametrize(
    ("workflow", "case", "args", "expected"), STARTS, ids=[f"{w}: {c}" for w, c, _, _ in STARTS]
)
async def test_a_bad_start_fails_the_run_at_once_naming_the_problem(
    scripted_agent: ScriptedHarness, workflow: str, case: str, args: list[Any], expected: str
) -> None:
    message = await start_failure(scripted_agent, workflow, args)
    assert message.startswith(f"invalid {workflow} input: "), message
    assert expected in message, message


async def test_bad_signals_and_updates_never_wedge_a_session(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("write_file", {"path": "s.txt", "content": "hi"}, id="w1")),
        sm.text("written"),
        sm.text("second answer"),
    )
    handle = await scripted_agent.client.start_workflow(
        "SessionWorkflow",
        args=[],  # no input at all is a session with every default
        id=f"session-{uuid.uuid4()}",
        task_queue=scripted_agent.task_queue,
    )
    await handle.signal("send", {"text": "write it", "by": "alice"})
    await wait_status(handle, lambda s: bool(s.pending))

    for name in ("send", "approve", "reject", "reply", "steer", "child_pending", "turn_pending"):
        for args in BAD_PAYLOADS.values():
            await handle.signal(name, args=args)
    for name in ("end", "cancel_turn", "turn_finished"):  # `end` without input is valid: not sent
        for case, args in BAD_PAYLOADS.items():
            if case != "no payload":
                await handle.signal(name, args=args)
    for case, args in BAD_PAYLOADS.items():
        for update in ("send", "decide", "steer", "edit_plan"):
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(update, args=args)
            assert isinstance(refused.value.cause, ApplicationError), (case, update)
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update("send", {"text": " \u200b "})
    assert isinstance(refused.value.cause, ApplicationError)
    assert refused.value.cause.message == "text: the message is empty"

    status = await handle.query("status", result_type=SessionStatus)
    assert status.state == "running" and status.queued == 0
    assert [p.call_id for p in status.pending] == ["w1"]
    await handle.signal("approve", {"call_id": "w1"})
    second = await handle.execute_update("send", {"text": "and now?"}, result_type=TurnResult)
    assert second.answer == "second answer"
    await handle.signal("end")
    result = await handle.result()
    assert result["turns"] == 2
    assert await workflow_task_failures(handle) == []


async def test_the_session_queue_is_bounded(scripted_agent: ScriptedHarness) -> None:
    from durable_agents.loop.session_queue import MAX_QUEUED_MESSAGES

    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("write_file", {"path": "q.txt", "content": "hi"}, id="w1")),
        *[sm.text(f"answer {i}") for i in range(MAX_QUEUED_MESSAGES + 1)],
    )
    handle = await scripted_agent.client.start_workflow(
        "SessionWorkflow", {}, id=f"session-{uuid.uuid4()}", task_queue=scripted_agent.task_queue
    )
    await handle.signal("send", {"text": "write it"})
    await wait_status(handle, lambda s: bool(s.pending))  # the first turn waits for a person
    for index in range(MAX_QUEUED_MESSAGES + 5):
        await handle.signal("send", {"text": f"message {index}"})
    status = await wait_status(handle, lambda s: s.queued == MAX_QUEUED_MESSAGES)
    assert status.queued == MAX_QUEUED_MESSAGES
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update("send", {"text": "one more"})
    assert isinstance(refused.value.cause, ApplicationError)
    assert f"{MAX_QUEUED_MESSAGES} messages already wait" in refused.value.cause.message
    assert json.loads(json.dumps(status.model_dump(mode="json")))  # the query still answers
    await handle.signal("end")
    await handle.signal("approve", {"call_id": "w1"})
    result = await handle.result()
    assert result["turns"] == 1 + MAX_QUEUED_MESSAGES
    assert await workflow_task_failures(handle) == []
