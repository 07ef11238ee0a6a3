"""Each loop guard against a scripted model that misbehaves: budgets, repeated calls and
errors, max-iterations behaviours, stop tools, reasoning-only replies, the context window.

Loop logic only, so the worker's model is the in-memory `ScriptedChatModel` (real worker, real
Temporal server, no HTTP hop); what goes over the wire is tested against the fake server."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.errors import MAX_ITERATIONS_REACHED, NO_PRICE_FOR_MODEL
from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.loop.context_window import SUMMARY_SYSTEM_PROMPT, estimate_tokens
from durable_agents.loop.limits import FINAL_ANSWER_PROMPT
from durable_agents.loop.model_reply import EMPTY_ANSWER_MESSAGE
from tests import scripted_model as sm
from tests.conftest import ScriptedHarness, activity_types


def always(reply: sm.ReplyLike) -> sm.Handler:
    return lambda request: reply


async def failure_of(agent: ScriptedHarness, payload: dict[str, Any]) -> ApplicationError:
    handle = await agent.start(payload)
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError)
    return cause


async def test_token_budget_stops_and_keeps_partial_steps(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.set_handler(
        lambda request: sm.tool_calls(
            sm.call("echo", {"text": f"t{len(request.messages)}"}), usage=(100, 50)
        )
    )
    result, _ = await scripted_agent.run(
        {"prompt": "x", "tools": ["echo"], "max_total_tokens": 250}
    )
    assert result.stop_reason == "token_budget"
    assert result.usage.total_tokens == 300
    assert result.answer.startswith("Stopped: the token budget of 250 tokens was used up")
    assert len(result.steps) == 1  # the second reply's calls did not run
    assert scripted_agent.model.request_count == 2


async def test_cost_budget_stops_with_the_cost_in_the_result(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(always(sm.tool_calls(sm.call("echo", {"text": "a"}))))
    prices = {"fake-model": {"input_per_million": 100_000, "output_per_million": 100_000}}
    result, _ = await scripted_agent.run(
        {"prompt": "x", "tools": ["echo"], "cost_budget": {"max_usd": 2.0, "prices": prices}}
    )
    assert result.stop_reason == "cost_budget"
    assert result.cost_usd == pytest.approx(3.0)  # (10 + 5) tokens x $0.1 per call, two calls
    assert result.answer.startswith("Stopped: the cost budget of $2 was used up ($3.0000 spent)")


async def test_cost_budget_without_a_price_for_the_model_fails_clearly(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(sm.text("hi"))
    prices = {"other-model": {"input_per_million": 1, "output_per_million": 1}}
    cause = await failure_of(
        scripted_agent, {"prompt": "x", "cost_budget": {"max_usd": 1, "prices": prices}}
    )
    assert cause.type == NO_PRICE_FOR_MODEL
    assert "no price for model 'fake-model-1'" in cause.message


async def test_repeated_identical_call_is_warned_then_stopped(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(always(sm.tool_calls(sm.call("echo", {"text": "same"}))))
    result, handle = await scripted_agent.run({"prompt": "loop", "tools": ["echo"]})

    assert result.stop_reason == "repeated_calls"
    assert result.answer.startswith("Stopped: the model kept repeating the same echo call")
    assert [s.status for s in result.steps] == ["ok", "ok", "error"]
    warning = result.steps[2].observation
    assert warning.startswith("Error: you already called echo with these exact arguments 2 times")
    assert "the result was: same" in warning
    sent = [m for m in scripted_agent.model.requests[3].messages if m.role == "tool"]
    assert sent[-1].content == warning  # the model was told before it was stopped
    assert await activity_types(handle) == [
        "call_model", "echo", "call_model", "echo", "call_model", "call_model",
    ]  # fmt: skip


async def test_repeated_identical_error_is_warned_then_stopped(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(
        lambda request: sm.tool_calls(
            sm.call("broken_lookup", {"query": f"q{len(request.messages)}"})
        )
    )
    result, _ = await scripted_agent.run({"prompt": "look", "tools": ["broken_lookup"]})
    assert result.stop_reason == "repeated_calls"
    assert len(result.steps) == 4
    assert result.steps[1].observation == "Error: the lookup service is down"
    assert "This same error has now happened 3 times" in result.steps[2].observation


async def test_max_iterations_final_answer_asks_once_more_without_tools(
    scripted_agent: ScriptedHarness,
) -> None:
    def handler(request: ModelRequest) -> sm.ReplyLike:
        if request.tool_choice == "none":
            return sm.text("Best effort: 42.")
        return sm.tool_calls(sm.call("echo", {"text": f"{len(request.messages)}"}))

    scripted_agent.model.set_handler(handler)
    result, _ = await scripted_agent.run(
        {"prompt": "x", "tools": ["echo"], "max_iterations": 2, "on_max_iterations": "final_answer"}
    )
    assert (result.answer, result.stop_reason, result.iterations) == (
        "Best effort: 42.", "max_iterations", 3,
    )  # fmt: skip
    last = scripted_agent.model.last_request
    assert last.tool_choice == "none"
    assert last.messages[-1] == ChatMessage.user(FINAL_ANSWER_PROMPT)
    # The unexecuted calls of the last turn are not in the conversation: pairing stays valid.
    assert last.messages[-2].role == "tool"


async def test_max_iterations_fail_carries_the_partial_result(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(
        lambda request: sm.tool_calls(sm.call("echo", {"text": f"{len(request.messages)}"}))
    )
    cause = await failure_of(
        scripted_agent,
        {"prompt": "x", "tools": ["echo"], "max_iterations": 2, "on_max_iterations": "fail"},
    )
    assert cause.type == MAX_ITERATIONS_REACHED
    assert cause.message.startswith("Max iterations (2) reached.")
    [partial] = cause.details
    assert partial["stop_reason"] == "max_iterations"
    assert len(partial["steps"]) == 1


async def test_final_answer_tool_ends_the_run(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("echo", {"text": "side"}, id="e"),
            sm.call("final_answer", {"answer": "All done: 7."}, id="f"),
        )
    )
    result, handle = await scripted_agent.run({"prompt": "x", "tools": ["echo", "final_answer"]})
    assert (result.answer, result.stop_reason) == ("All done: 7.", "stopped_by_tool")
    assert [s.tool for s in result.steps] == ["echo", "final_answer"]
    assert scripted_agent.model.request_count == 1
    assert await activity_types(handle) == ["call_model", "echo", "final_answer"]


async def test_reasoning_only_replies_never_become_the_answer(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.set_handler(
        always(sm.text("", reasoning_content="Let me think about it..."))
    )
    result, _ = await scripted_agent.run({"prompt": "x"})
    assert (result.answer, result.stop_reason) == (EMPTY_ANSWER_MESSAGE, "empty_answer")
    assert "think" not in result.answer
    assert scripted_agent.model.request_count == 2


def estimated(messages: list[ChatMessage]) -> int:
    return sum(estimate_tokens(m) for m in messages)


def assert_paired(messages: list[ChatMessage]) -> None:
    open_ids: list[str | None] = []
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id == open_ids.pop(0)
        else:
            assert not open_ids, f"tool calls without results: {open_ids}"
            open_ids = [c.id for c in message.tool_calls]
    assert not open_ids


async def test_context_is_fitted_and_pairing_kept(scripted_agent: ScriptedHarness) -> None:
    turns = iter(range(100))
    scripted_agent.model.set_handler(
        lambda request: sm.tool_calls(sm.call("big_output", {"chars": 1500 + next(turns)}))
    )
    result, _ = await scripted_agent.run(
        {"prompt": "the prompt", "tools": ["big_output"], "max_iterations": 8,
         "max_context_tokens": 1500, "max_repeated_calls": 50}
    )  # fmt: skip
    assert result.stop_reason == "max_iterations"
    for request in scripted_agent.model.requests:
        messages = request.messages
        assert messages[0].role == "system"
        assert messages[1] == ChatMessage.user("the prompt")
        assert_paired(messages)
        assert estimated(messages) <= 1500
    last = scripted_agent.model.last_request.messages
    assert "earlier messages of this task were left out" in (last[2].content or "")


async def test_context_can_be_summarised_by_the_model(scripted_agent: ScriptedHarness) -> None:
    turns = iter(range(100))

    def handler(request: ModelRequest) -> sm.ReplyLike:
        if request.messages[0].content == SUMMARY_SYSTEM_PROMPT:
            return sm.text("SUMMARY: big outputs were fetched.")
        return sm.tool_calls(sm.call("big_output", {"chars": 1500 + next(turns)}))

    scripted_agent.model.set_handler(handler)
    result, handle = await scripted_agent.run(
        {"prompt": "the prompt", "tools": ["big_output"], "max_iterations": 6,
         "max_context_tokens": 1500, "max_repeated_calls": 50, "context_strategy": "summarize"}
    )  # fmt: skip
    assert result.stop_reason == "max_iterations"
    last = scripted_agent.model.last_request.messages
    assert (last[2].content or "").startswith(
        "[Summary of the earlier part of this task]\nSUMMARY:"
    )
    assert_paired(last)
    assert estimated(last) <= 1500
    history = await handle.fetch_history()
    summaries = [
        e.user_metadata.summary.data.decode()
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert any("context summary" in s for s in summaries)
