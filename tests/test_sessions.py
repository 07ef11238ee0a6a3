"""Sessions: memory across turns, window trimming, queued messages, continue-as-new that keeps
memory, queued messages and a pending approval, ending, and refusals."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.session import MemoryTurn, SessionResult, SessionStatus, TurnResult
from durable_agents.testing import fake_openai as fake
from tests.conftest import AgentHarness
from tests.session_support import echo_model, send_with_start, wait_status


def history_sent(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in body["messages"][1:]]


async def model_contexts(handle: WorkflowHandle[Any, Any]) -> list[dict[str, Any]]:
    """The context delta of each `call_model` activity in the run's history, in order."""
    return [
        json.loads(e.activity_task_scheduled_event_attributes.input.payloads[0].data)["context"]
        async for e in handle.fetch_history_events()
        if e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
    ]


async def test_turns_remember_earlier_turns(agent: AgentHarness) -> None:
    agent.fake.set_handler(echo_model)
    session = f"session-{uuid.uuid4()}"
    first, handle = await send_with_start(agent.client, session, agent.task_queue, "I am Ann.")
    assert (first.turn, first.answer) == (1, "answer to: I am Ann.")
    assert first.workflow_id == session  # the turn ran inside the session's history
    second = await handle.execute_update("send", {"text": "Who am I?"}, result_type=TurnResult)
    assert second.turn == 2
    assert history_sent(agent.fake.last_request.body) == [
        ("user", "I am Ann."),
        ("assistant", "answer to: I am Ann."),
        ("user", "Who am I?"),
    ]
    # The second turn's model call carried its new message only: the remembered turn was taken
    # from the worker's context cache (the previous turn's messages, reused by position).
    contexts = await model_contexts(handle)
    assert [len(c["new_messages"]) for c in contexts] == [2, 2]
    assert [m["content"] for m in contexts[1]["new_messages"]] == [
        "answer to: I am Ann.",  # the final answer ended the turn: the cache never saw it
        "Who am I?",
    ]
    assert contexts[1]["reuse"] == [[0, 2], [-1, 2]]
    history = await handle.query("history", result_type=list[MemoryTurn])
    assert [(t.user, t.answer) for t in history] == [
        ("I am Ann.", "answer to: I am Ann."),
        ("Who am I?", "answer to: Who am I?"),
    ]


async def test_memory_window_keeps_the_most_recent_turns(agent: AgentHarness) -> None:
    agent.fake.set_handler(echo_model)
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(
        agent.client, session, agent.task_queue, "one", {"memory_max_turns": 2}
    )
    for text in ("two", "three", "four"):
        await handle.execute_update("send", {"text": text}, result_type=TurnResult)
    assert [c for r, c in history_sent(agent.fake.last_request.body) if r == "user"] == [
        "two",
        "three",
        "four",
    ]


async def test_memory_can_include_a_note_of_the_tools_used(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("calculator", {"expression": "17*25"})), fake.text("425")
    )
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(
        agent.client, session, agent.task_queue, "17*25?", {"memory_mode": "answers_and_tools"}
    )
    agent.fake.set_handler(echo_model)
    await handle.execute_update("send", {"text": "and now?"}, result_type=TurnResult)
    remembered = history_sent(agent.fake.last_request.body)[1][1]
    assert remembered.startswith('[tools used: calculator {"expression": "17*25"} -> 425]')


async def test_signalled_messages_are_queued_and_answered_in_order(agent: AgentHarness) -> None:
    agent.fake.set_handler(lambda body: fake.delay(0.2, echo_model(body)))
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(agent.client, session, agent.task_queue, "m0")
    for index in range(1, 4):
        await handle.signal("send", {"text": f"m{index}"})
    await wait_status(handle, lambda s: s.turns == 4 and s.state == "idle")
    history = await handle.query("history", result_type=list[MemoryTurn])
    assert [t.user for t in history] == ["m0", "m1", "m2", "m3"]


async def test_continue_as_new_keeps_memory_and_queued_messages(agent: AgentHarness) -> None:
    agent.fake.set_handler(lambda body: fake.delay(0.1, echo_model(body)))
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(
        agent.client, session, agent.task_queue, "m0", {"continue_as_new_after_events": 30}
    )
    for index in range(1, 8):
        await handle.signal("send", {"text": f"m{index}"})
    status = await wait_status(handle, lambda s: s.turns == 8 and s.state == "idle", 60)
    assert status.runs > 1  # it continued-as-new at least once
    history = await handle.query("history", result_type=list[MemoryTurn])
    assert [t.user for t in history] == [f"m{i}" for i in range(8)]
    users = [c for r, c in history_sent(agent.fake.last_request.body) if r == "user"]
    assert users == [f"m{i}" for i in range(8)]  # the last turn saw all earlier turns


def save_it_model(body: dict[str, Any]) -> Any:
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    if users[-1] == "save it" and body["messages"][-1]["role"] == "user":
        return fake.tool_calls(fake.call("write_file", {"path": "s.txt", "content": "s"}))
    return echo_model(body)


@pytest.mark.parametrize("turns", ["child", "inline"])
async def test_approval_pending_across_continue_as_new(agent: AgentHarness, turns: str) -> None:
    """A turn waits for approval while messages pile up. A child turn waits in its own run
    while the session continues-as-new; an inline turn holds the session's run (whose history
    grows by the queued signals only) and the session continues-as-new after it."""
    agent.fake.set_handler(save_it_model)
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(
        agent.client,
        session,
        agent.task_queue,
        "hello",
        {"continue_as_new_after_events": 30, "turns": turns},
    )
    await handle.signal("send", {"text": "save it"})
    status = await wait_status(handle, lambda s: len(s.pending) == 1)
    runs_before = status.runs
    for index in range(12):  # history grows while the turn waits
        await handle.signal("send", {"text": f"later {index}"})
    if turns == "child":  # the session moves on
        status = await wait_status(handle, lambda s: s.runs > runs_before and len(s.pending) == 1)
    else:
        status = await wait_status(handle, lambda s: s.queued == 12 and len(s.pending) == 1)
        assert status.runs == runs_before
    assert status.running is not None and status.running.message.text == "save it"
    assert status.running.inline == (turns == "inline")

    await handle.signal("approve", {"call_id": "*", "by": "ops"})  # forwarded to the turn
    await wait_status(handle, lambda s: s.turns == 14 and s.state == "idle", 60)
    assert (agent.workspace / "s.txt").read_text() == "s"
    history = await handle.query("history", result_type=list[MemoryTurn])
    assert [t.user for t in history][1:3] == ["save it", "later 0"]
    assert (await handle.query("status", result_type=SessionStatus)).runs > runs_before


async def test_end_answers_what_is_queued_then_closes(agent: AgentHarness) -> None:
    agent.fake.set_handler(lambda body: fake.delay(0.3, echo_model(body)))
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(agent.client, session, agent.task_queue, "first")
    await handle.signal("send", {"text": "second"})
    await handle.signal("end", {"reason": "done for today", "by": "ann"})
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update("send", {"text": "too late"}, result_type=TurnResult)
    assert isinstance(refused.value.cause, ApplicationError)
    assert "the session has ended" in refused.value.cause.message
    ended = agent.client.get_workflow_handle(session, result_type=SessionResult)
    result = await ended.result()
    assert (result.turns, result.reason, result.last_answer) == (
        2, "done for today", "answer to: second",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"text": ""}, "text: String should have at least 1 character"),
        ({"text": "   "}, "text: the message is empty"),
        ({"text": "x" * 11}, "the message has 11 characters; the most is 10"),
        ({"txt": "typo"}, "txt: Extra inputs are not permitted"),
    ],
)
async def test_bad_messages_are_refused(
    agent: AgentHarness, payload: dict[str, Any], message: str
) -> None:
    agent.fake.set_handler(echo_model)
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(
        agent.client, session, agent.task_queue, "hi", {"max_message_chars": 10}
    )
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update("send", payload, result_type=TurnResult)
    assert isinstance(refused.value.cause, ApplicationError)
    assert message in refused.value.cause.message
    await handle.signal("send", payload)  # the signal form is logged and ignored
    await handle.signal("send", {"text": "ok"})
    await wait_status(handle, lambda s: s.turns == 2 and s.state == "idle")


async def test_malformed_internal_signals_are_ignored(agent: AgentHarness) -> None:
    agent.fake.set_handler(echo_model)
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(agent.client, session, agent.task_queue, "one")
    await handle.signal("turn_finished", {"bogus": 1})
    await handle.signal("turn_pending", "not a list")
    await handle.signal("turn_pending", [{"call_id": 5}])
    second = await handle.execute_update("send", {"text": "two"}, result_type=TurnResult)
    assert second.answer == "answer to: two"  # the session kept working


async def test_inline_turns_get_the_whole_conversation_after_a_cache_miss_or_a_failed_turn(
    agent: AgentHarness,
) -> None:
    """The worker's context cache is an optimisation: a turn whose cache entry is gone, or that
    follows a turn whose model call failed, sends the whole conversation, and the model sees
    exactly the remembered turns either way."""
    agent.fake.set_handler(echo_model)
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(agent.client, session, agent.task_queue, "one")
    agent.cache._entries.clear()  # a worker restart, or another worker
    await handle.execute_update("send", {"text": "two"}, result_type=TurnResult)
    assert history_sent(agent.fake.last_request.body) == [
        ("user", "one"),
        ("assistant", "answer to: one"),
        ("user", "two"),
    ]
    assert agent.cache.misses == 1

    agent.fake.set_handler(lambda body: fake.error(400, "rejected"))
    failed = await handle.execute_update("send", {"text": "three"}, result_type=TurnResult)
    assert failed.error is not None and "rejected" in failed.error
    agent.fake.set_handler(echo_model)
    await handle.execute_update("send", {"text": "four"}, result_type=TurnResult)
    sent = history_sent(agent.fake.last_request.body)
    note = sent.pop(5)
    assert sent == [
        ("user", "one"),
        ("assistant", "answer to: one"),
        ("user", "two"),
        ("assistant", "answer to: two"),
        ("user", "three"),
        ("user", "four"),
    ]
    assert note[1].startswith("[note: the previous request did not complete: it failed")
    contexts = await model_contexts(handle)
    assert [c["held"] for c in contexts[-1:]] == [0]  # after the failure: everything
    assert agent.cache.misses == 1


async def test_a_continued_session_names_what_the_cache_holds(agent: AgentHarness) -> None:
    """The session carries what the worker's context cache holds (digests, not messages) across
    continue-as-new: the next run's first turn sends its new messages only."""
    agent.fake.set_handler(echo_model)
    session = f"session-{uuid.uuid4()}"
    # (no delta signals: they would move the continue-as-new point past the last turn, leaving
    # the current run without a model call to look at)
    # (50 events: the session continues-as-new after its third turn, and runs the fourth in the
    # next run; each turn's definition check is a few events of its own, issue 37)
    settings = {"continue_as_new_after_events": 50, "agent": {"stream_deltas": False}}
    _, handle = await send_with_start(agent.client, session, agent.task_queue, "one", settings)
    texts = ["two", "three", "four"]
    for text in texts:
        await handle.execute_update("send", {"text": text}, result_type=TurnResult)
    status = await handle.query("status", result_type=SessionStatus)
    assert status.runs > 1
    latest = agent.client.get_workflow_handle(session)  # the current run
    contexts = await model_contexts(latest)
    assert contexts and all(c["held"] > 0 for c in contexts)  # nothing sent again
    first = contexts[0]
    assert first["reuse"][0][0] == 0  # from the system prompt on, what the cache holds
    assert len(first["new_messages"]) == 2  # the previous answer and the new message
    assert history_sent(agent.fake.last_request.body)[-1] == ("user", "four")
    assert agent.cache.misses == 0


async def test_a_late_report_from_an_earlier_turns_sub_agent_is_dropped(
    agent: AgentHarness,
) -> None:
    agent.fake.set_handler(save_it_model)
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(agent.client, session, agent.task_queue, "hello")
    await handle.signal("send", {"text": "save it"})
    [request] = (await wait_status(handle, lambda s: len(s.pending) == 1)).pending
    stale = {
        "call_key": "researcher-c1",
        "workflow_id": f"{session}/turn-1/researcher-c1",  # turn 1 ended; turn 2 runs
        "pending": [request.model_dump(mode="json")],
    }
    await handle.signal("child_pending", stale)
    await handle.execute_update("steer", {"text": "go on"})  # handled after the signal
    status = await handle.query("status", result_type=SessionStatus)
    assert [p.call_id for p in status.pending] == [request.call_id]  # not "researcher-c1/..."
    await handle.signal("approve", {"call_id": "*"})
    await wait_status(handle, lambda s: s.turns == 2 and s.state == "idle")
    assert (agent.workspace / "s.txt").read_text() == "s"
