"""Session memory keeps answers only: a turn that stopped at a limit or failed is remembered as a
note that the request did not complete, never as if the assistant had said its stop text or
error. Unit tests of `loop.memory`, then sessions on the real server and the fake model."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from durable_agents.contracts.agent_input import AgentSettings
from durable_agents.contracts.agent_result import StopReason, ToolStep
from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.session import MemoryTurn, SessionResult, TurnReport, TurnResult
from durable_agents.loop.limits import max_iterations_message
from durable_agents.loop.memory import (
    incomplete_note,
    incomplete_reason,
    last_answer,
    memory_messages,
    memory_turn,
    remember,
    turn_tokens,
)
from durable_agents.loop.tokens import estimate_messages_tokens
from durable_agents.testing import fake_openai as fake
from tests.conftest import AgentHarness
from tests.session_support import echo_model, send_with_start, wait_status

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def report(
    stop_reason: StopReason | None = StopReason.COMPLETED,
    answer: str = "42",
    error: str | None = None,
) -> TurnReport:
    return TurnReport(
        turn_id="t", workflow_id="s/turn-1", answer=answer, stop_reason=stop_reason, error=error
    )


def step(tool: str = "calculator", observation: str = "425") -> ToolStep:
    return ToolStep(
        iteration=1,
        call_id="c1",
        tool=tool,
        raw_arguments='{"expression": "17*25"}',
        args={"expression": "17*25"},
        observation=observation,
        status="ok",
        started_at=NOW,
        finished_at=NOW,
    )


# --- which turns have an answer ------------------------------------------------------------------


@pytest.mark.parametrize("stop_reason", [StopReason.COMPLETED, StopReason.STOPPED_BY_TOOL])
def test_answered_turns_have_no_incomplete_reason(stop_reason: StopReason) -> None:
    assert incomplete_reason(report(stop_reason), AgentSettings()) is None


@pytest.mark.parametrize("stop_reason", [r for r in StopReason if not r.answered])
def test_a_limit_stop_is_incomplete_with_its_reason(stop_reason: StopReason) -> None:
    reason = incomplete_reason(report(stop_reason, "the stop text"), AgentSettings())
    assert reason is not None and reason == stop_reason.incomplete_note
    assert "the stop text" not in reason


def test_a_failed_turn_is_incomplete_with_its_error_shortened() -> None:
    reason = incomplete_reason(report(None, "", error="boom\n" + "x" * 5_000), AgentSettings())
    assert reason is not None and reason.startswith("it failed: boom x")
    assert len(reason) < 400


def test_an_error_wins_over_a_stop_reason() -> None:
    reason = incomplete_reason(report(StopReason.COMPLETED, "42", error="lost"), AgentSettings())
    assert reason == "it failed: lost"


def test_a_best_answer_at_max_iterations_counts_as_an_answer() -> None:
    settings = AgentSettings(max_iterations=3, on_max_iterations="final_answer")
    assert (
        incomplete_reason(report(StopReason.MAX_ITERATIONS, "My best guess is 7."), settings)
        is None
    )
    # ... but not the stop text, which is what the run answers when the model gave nothing
    canned = max_iterations_message(3)
    assert incomplete_reason(report(StopReason.MAX_ITERATIONS, canned), settings) is not None
    assert incomplete_reason(report(StopReason.MAX_ITERATIONS, "  "), settings) is not None
    stop = AgentSettings(max_iterations=3, on_max_iterations="stop")
    assert (
        incomplete_reason(report(StopReason.MAX_ITERATIONS, "My best guess is 7."), stop)
        is not None
    )


# --- how memory keeps and shows them --------------------------------------------------------------


def test_an_incomplete_turn_keeps_the_question_and_a_note_not_the_answer() -> None:
    turn = memory_turn(1, "Sum the files", "Max iterations (1) reached.", [], "answers", "why")
    assert (turn.user, turn.answer, turn.incomplete) == ("Sum the files", "", "why")
    assert memory_messages([turn]) == [
        ChatMessage.user("Sum the files"),
        ChatMessage(role="assistant", content=incomplete_note("why")),
    ]
    assert incomplete_note("why") == (
        "[note: the previous request did not complete: why. It has no answer.]"
    )


def test_roles_keep_alternating_around_an_incomplete_turn() -> None:
    memory = [
        memory_turn(1, "q1", "a1", [], "answers"),
        memory_turn(2, "q2", "stop text", [], "answers", "it failed: boom"),
        memory_turn(3, "q3", "a3", [], "answers"),
    ]
    messages = memory_messages(memory)
    assert [m.role for m in messages] == ["user", "assistant"] * 3
    assert [m.content for m in messages] == [
        "q1",
        "a1",
        "q2",
        "[note: the previous request did not complete: it failed: boom. It has no answer.]",
        "q3",
        "a3",
    ]


def test_an_incomplete_turn_keeps_its_tools_note_in_answers_and_tools_mode() -> None:
    turn = memory_turn(1, "q", "stop text", [step()], "answers_and_tools", "limit")
    [_, said] = memory_messages([turn])
    assert said.content == (
        '[tools used: calculator {"expression": "17*25"} -> 425]\n'
        "[note: the previous request did not complete: limit. It has no answer.]"
    )


def test_last_answer_skips_turns_without_one() -> None:
    answered = memory_turn(1, "q1", "a1", [], "answers")
    failed = memory_turn(2, "q2", "", [], "answers", "it failed: boom")
    assert last_answer([answered, failed]) == "a1"
    assert last_answer([failed]) is None
    assert last_answer([]) is None


def test_turn_tokens_are_the_estimate_of_the_messages_sent() -> None:
    turn = memory_turn(1, "question " * 50, "", [], "answers", "it failed: boom")
    assert turn_tokens(turn) == estimate_messages_tokens(memory_messages([turn]))
    # the window counts what the next turn is sent: here the note, not an (empty) answer
    assert turn_tokens(turn) > turn_tokens(turn.model_copy(update={"incomplete": None}))


def test_the_token_window_drops_the_oldest_turns() -> None:
    turns = [memory_turn(i, "x" * 400, "y" * 400, [], "answers") for i in range(1, 6)]
    per_turn = turn_tokens(turns[0])
    memory: list[MemoryTurn] = []
    for turn in turns:
        memory = remember(memory, turn, max_turns=20, max_tokens=per_turn * 2)
    assert [t.turn for t in memory] == [4, 5]


# --- sessions on the real server ------------------------------------------------------------------


def sent(body: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(m["role"], m.get("content")) for m in body["messages"][1:]]


async def test_a_turn_stopped_at_max_iterations_is_remembered_as_not_completed(
    agent: AgentHarness,
) -> None:
    agent.fake.enqueue(fake.tool_calls(fake.call("calculator", {"expression": "1+1"})))
    session = f"session-{uuid.uuid4()}"
    first, handle = await send_with_start(
        agent.client, session, agent.task_queue, "Add it up", {"agent": {"max_iterations": 1}}
    )
    assert first.stop_reason == "max_iterations"
    assert first.answer == max_iterations_message(1)  # the caller still gets the run's result

    agent.fake.set_handler(echo_model)
    await handle.execute_update("send", {"text": "What did you find?"}, result_type=TurnResult)
    messages = sent(agent.fake.last_request.body)
    assert not any(
        role == "assistant" and "Max iterations" in (content or "") for role, content in messages
    )
    assert messages == [
        ("user", "Add it up"),
        (
            "assistant",
            "[note: the previous request did not complete: it reached its limit of model calls "
            "(max_iterations). It has no answer.]",
        ),
        ("user", "What did you find?"),
    ]
    history = await handle.query("history", result_type=list[MemoryTurn])
    assert [(t.user, t.answer, t.incomplete) for t in history] == [
        ("Add it up", "", StopReason.MAX_ITERATIONS.incomplete_note),
        ("What did you find?", "answer to: What did you find?", None),
    ]


async def test_a_turn_over_its_token_budget_is_remembered_as_not_completed(
    agent: AgentHarness,
) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("calculator", {"expression": "1+1"}), usage=(50, 50))
    )
    session = f"session-{uuid.uuid4()}"
    first, handle = await send_with_start(
        agent.client, session, agent.task_queue, "Go", {"agent": {"max_total_tokens": 10}}
    )
    assert first.stop_reason == "token_budget"

    agent.fake.set_handler(echo_model)
    await handle.execute_update("send", {"text": "And?"}, result_type=TurnResult)
    assert sent(agent.fake.last_request.body)[1] == (
        "assistant",
        "[note: the previous request did not complete: it used up its token budget "
        "(max_total_tokens). It has no answer.]",
    )
    assert first.answer not in str(sent(agent.fake.last_request.body))


async def test_a_failed_turn_is_remembered_as_not_completed(agent: AgentHarness) -> None:
    agent.fake.enqueue(fake.error(400, "this request is not valid"))
    session = f"session-{uuid.uuid4()}"
    first, handle = await send_with_start(agent.client, session, agent.task_queue, "Do it")
    assert first.error is not None and first.answer == ""

    agent.fake.set_handler(echo_model)
    second = await handle.execute_update("send", {"text": "Well?"}, result_type=TurnResult)
    assert second.answer == "answer to: Well?"
    [asked, said, now] = sent(agent.fake.last_request.body)
    assert asked == ("user", "Do it")
    assert said[0] == "assistant"
    assert (said[1] or "").startswith("[note: the previous request did not complete: it failed: ")
    assert "this request is not valid" in (said[1] or "")
    assert now == ("user", "Well?")

    await handle.signal("end", {})
    result = await agent.client.get_workflow_handle(session, result_type=SessionResult).result()
    assert result.last_answer == "answer to: Well?"


async def test_the_last_answer_of_a_session_is_never_a_stop_text(agent: AgentHarness) -> None:
    agent.fake.set_handler(echo_model)
    session = f"session-{uuid.uuid4()}"
    _, handle = await send_with_start(
        agent.client, session, agent.task_queue, "hello", {"agent": {"max_iterations": 1}}
    )
    agent.fake.set_handler(None)
    agent.fake.enqueue(fake.tool_calls(fake.call("calculator", {"expression": "1+1"})))
    last = await handle.execute_update("send", {"text": "add"}, result_type=TurnResult)
    assert last.stop_reason == "max_iterations"
    await handle.signal("end", {})
    result = await agent.client.get_workflow_handle(session, result_type=SessionResult).result()
    assert result.last_answer == "answer to: hello"


@pytest.mark.parametrize(
    ("turns", "how"), [("inline", "cancel_turn"), ("child", "cancel_turn"), ("child", "cancel")]
)
async def test_a_cancelled_turn_is_reported_and_the_session_goes_on(
    agent: AgentHarness, turns: str, how: str
) -> None:
    """`cancel_turn` (or, for a child turn, cancelling its run) ends the turn, not the session."""
    agent.fake.enqueue(
        fake.tool_calls(fake.call("write_file", {"path": "a.txt", "content": "x"}, id="w"))
    )
    session = f"session-{uuid.uuid4()}"
    handle = await agent.client.start_workflow(
        "SessionWorkflow", {"turns": turns}, id=session, task_queue=agent.task_queue
    )
    await handle.signal("send", {"text": "Write it"})
    waiting = await wait_status(handle, lambda s: bool(s.pending) and s.running is not None)
    assert waiting.running is not None
    if how == "cancel":
        await agent.client.get_workflow_handle(waiting.running.workflow_id).cancel()
    else:
        await handle.signal("cancel_turn")

    idle = await wait_status(handle, lambda s: s.running is None and s.turns == 1)
    assert idle.pending == []
    history = await handle.query("history", result_type=list[MemoryTurn])
    assert [(t.user, t.incomplete) for t in history] == [
        ("Write it", "it failed: the turn was cancelled")
    ]
    agent.fake.set_handler(echo_model)
    after = await handle.execute_update("send", {"text": "Never mind"}, result_type=TurnResult)
    assert after.answer == "answer to: Never mind"
