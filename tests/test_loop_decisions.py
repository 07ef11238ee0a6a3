"""Unit tests of the loop's decisions that the workflow delegates to: the stop decision, reading a
reply, how the scratchpad moves forward, the context plan, and what `status` shows. Pure
functions: no Temporal, no network, no clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from durable_agents.contracts.agent_result import ModelCall, ToolStep
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.approvals import PendingRequest, WaitKind
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelReply
from durable_agents.contracts.plan import Plan
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.contracts.scratchpad import RepetitionState, Scratchpad
from durable_agents.contracts.stop_reason import StopReason
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.context_plan import plan_context, summary_due, with_summary
from durable_agents.loop.continuation import MAX_KEPT_STEPS
from durable_agents.loop.markdown import code_span
from durable_agents.loop.model_reply import EMPTY_ANSWER_MESSAGE, EMPTY_REPLY_NUDGE, read_reply
from durable_agents.loop.plan import new_plan, with_status
from durable_agents.loop.progress import (
    ModelAnswer,
    Round,
    next_iteration,
    run_result,
    with_model_call,
    with_round,
)
from durable_agents.loop.status import current_details, run_status, visible_phase
from durable_agents.loop.stop import Limits, Outcome, Stop, decide_stop

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def pad(**fields: object) -> Scratchpad:
    base: dict[str, object] = {
        "messages": [ChatMessage.system("s"), ChatMessage.user("p")],
        "iteration": 1,
    }
    return Scratchpad.model_validate({**base, **fields})


def usage(total: int) -> TokenUsage:
    return TokenUsage(prompt_tokens=total, completion_tokens=0, total_tokens=total)


def step(call_id: str, observation: str = "ok") -> ToolStep:
    return ToolStep(
        iteration=1,
        call_id=call_id,
        tool="calculator",
        raw_arguments="{}",
        args={},
        observation=observation,
        status="ok",
        started_at=NOW,
        finished_at=NOW,
    )


# --- decide_stop ----------------------------------------------------------------------------

LIMITS = Limits(max_iterations=5, max_total_tokens=100, max_usd=1.0)


def test_going_on_is_no_stop() -> None:
    assert decide_stop(pad(), LIMITS, Outcome()) is None


def test_a_final_answer_completes_even_over_budget() -> None:
    stop = decide_stop(pad(usage=usage(10_000)), LIMITS, Outcome(answer="42"))
    assert stop == Stop(StopReason.COMPLETED, "42")


def test_giving_up_after_the_nudge() -> None:
    assert decide_stop(pad(), LIMITS, Outcome(gave_up="nothing")) == Stop(
        StopReason.EMPTY_ANSWER, "nothing"
    )


def test_a_stop_tool_ends_the_run_with_its_answer() -> None:
    stop = decide_stop(pad(), LIMITS, Outcome(stopped_by_tool="the end"))
    assert stop == Stop(StopReason.STOPPED_BY_TOOL, "the end")


def test_a_stop_tool_wins_over_a_repeat_in_the_same_round() -> None:
    outcome = Outcome(stopped_by_tool="the end", repeated_tool="calculator")
    stop = decide_stop(pad(), LIMITS, outcome)
    assert stop is not None and stop.reason == "stopped_by_tool"


def test_repeats_stop_the_run_naming_the_tool() -> None:
    stop = decide_stop(pad(), LIMITS, Outcome(repeated_tool="calculator"))
    assert stop is not None and stop.reason == "repeated_calls"
    assert "calculator" in stop.answer


def test_token_budget_is_passed_not_reached() -> None:
    assert decide_stop(pad(usage=usage(100)), LIMITS, Outcome()) is None
    stop = decide_stop(pad(usage=usage(101)), LIMITS, Outcome())
    assert stop is not None and stop.reason == "token_budget"
    assert "100 tokens" in stop.answer and "101 tokens spent" in stop.answer


def test_cost_budget() -> None:
    stop = decide_stop(pad(cost_usd=1.5), LIMITS, Outcome())
    assert stop is not None and stop.reason == "cost_budget"
    assert "$1 " in stop.answer and "$1.5000" in stop.answer


def test_a_budget_wins_over_the_last_iteration() -> None:
    stop = decide_stop(pad(iteration=5, usage=usage(500)), LIMITS, Outcome())
    assert stop is not None and stop.reason == "token_budget"


def test_the_last_iteration_without_an_answer_stops() -> None:
    assert decide_stop(pad(iteration=4), LIMITS, Outcome()) is None
    stop = decide_stop(pad(iteration=5), LIMITS, Outcome())
    assert stop is not None and stop.reason == "max_iterations"
    assert "Max iterations (5)" in stop.answer


def test_no_limits_no_budget_stop() -> None:
    limits = Limits(max_iterations=3)
    assert decide_stop(pad(usage=usage(10**9), cost_usd=10**6), limits, Outcome()) is None


# --- read_reply -----------------------------------------------------------------------------


def reply(content: str | None = None, *calls: ToolCall) -> ModelReply:
    return ModelReply(model="m", content=content, tool_calls=list(calls))


def test_tool_calls_go_on_to_a_round() -> None:
    before = pad()
    reading = read_reply(before, reply("thinking...", ToolCall(id="a", name="t", arguments="")))
    assert reading.pad is before and reading.outcome == Outcome() and not reading.refused


def test_text_is_the_final_answer() -> None:
    assert read_reply(pad(), reply("  42 ")).outcome == Outcome(answer="  42 ")


def test_an_empty_reply_is_nudged_once_then_given_up() -> None:
    first = read_reply(pad(), reply("  "))
    nudged = first.pad
    assert first.outcome == Outcome()
    assert nudged.nudged_empty and nudged.messages[-1] == ChatMessage.user(EMPTY_REPLY_NUDGE)
    again = read_reply(nudged, reply(None))
    assert again.pad is nudged and again.outcome == Outcome(gave_up=EMPTY_ANSWER_MESSAGE)


def test_a_cut_off_reply_is_never_a_completed_answer() -> None:
    cut = ModelReply(model="m", content="The answer is 4", finish_reason="length")
    stop = decide_stop(pad(), LIMITS, read_reply(pad(), cut).outcome)
    assert stop is not None and stop.reason == "length"
    assert stop.answer.startswith("The answer is 4") and "cut off" in stop.answer


def test_a_filtered_reply_stops_with_its_own_reason() -> None:
    filtered = ModelReply(model="m", content=None, finish_reason="content_filter")
    stop = decide_stop(pad(), LIMITS, read_reply(pad(), filtered).outcome)
    assert stop is not None and stop.reason == "content_filter" and "filter" in stop.answer


# --- the scratchpad moves forward -----------------------------------------------------------


def test_the_scratchpad_is_immutable() -> None:
    with pytest.raises(ValidationError):
        pad().iteration = 2  # type: ignore[misc]
    assert next_iteration(pad()).iteration == 2


def answer(total: int, cost: float | None = None, model: str = "m2") -> ModelAnswer:
    call = ModelCall(
        turn=1,
        purpose="turn",
        model=model,
        usage=usage(total),
        tool_calls=0,
        finish_reason="stop",
        started_at=NOW,
        finished_at=NOW,
    )
    return ModelAnswer(ModelReply(model=model, usage=usage(total)), call, cost)


def test_model_calls_add_usage_cost_and_records() -> None:
    after = with_model_call(with_model_call(pad(), answer(10, 0.25)), answer(5, 0.5, "m3"))
    assert after.usage.total_tokens == 15 and after.cost_usd == 0.75 and after.model == "m3"
    assert [c.model for c in after.model_calls] == ["m2", "m3"]


def test_without_a_cost_budget_cost_stays_unknown() -> None:
    assert with_model_call(pad(), answer(10)).cost_usd is None


def test_model_call_records_are_bounded() -> None:
    many = pad(model_calls=[answer(1).call] * MAX_KEPT_STEPS)
    assert len(with_model_call(many, answer(1, model="last")).model_calls) == MAX_KEPT_STEPS
    assert with_model_call(many, answer(1, model="last")).model_calls[-1].model == "last"


def test_a_round_appends_the_assistant_message_and_one_tool_message_per_call() -> None:
    calls = [ToolCall(id="a", name="t", arguments="{}"), ToolCall(id="b", name="t", arguments="")]
    state = RepetitionState(calls={"t:x": 1})
    before = pad(nudged_empty=True)
    after = with_round(
        before, reply(None, *calls), Round(steps=[step("b", "B"), step("a", "A")], repetition=state)
    )
    assert [m.role for m in after.messages[2:]] == ["assistant", "tool", "tool"]
    assert [(m.tool_call_id, m.content) for m in after.messages[3:]] == [("a", "A"), ("b", "B")]
    assert [s.call_id for s in after.steps] == ["b", "a"]
    assert after.repetition == state and not after.nudged_empty
    assert before.messages != after.messages  # the old scratchpad is untouched
    assert len(before.messages) == 2


def test_a_round_refused_before_running_changes_nothing() -> None:
    before = pad()
    call = ToolCall(id="a", name="t", arguments="{}")
    assert with_round(before, reply(None, call), Round(repeated_tool="t")) is before


def test_the_result_carries_the_stop_and_the_spending() -> None:
    final = with_model_call(pad(steps=[step("a")]), answer(7))
    result = run_result(final, Stop(StopReason.COMPLETED, "done"))
    assert (result.answer, result.stop_reason, result.iterations) == ("done", "completed", 1)
    assert result.usage.total_tokens == 7 and [s.call_id for s in result.steps] == ["a"]


# --- the context plan ------------------------------------------------------------------------


def long_pad(turns: int, chars: int = 400) -> Scratchpad:
    messages = [ChatMessage.system("s"), ChatMessage.user("prompt")]
    for index in range(turns):
        call = ToolCall(id=f"c{index}", name="t", arguments="{}")
        messages += [
            ChatMessage(role="assistant", tool_calls=[call]),
            ChatMessage.tool_result(f"c{index}", "x" * chars),
        ]
    return pad(messages=messages)


def test_everything_fits_nothing_to_summarise() -> None:
    small = long_pad(2)
    assert summary_due(small, 100_000) is None
    fit = plan_context(small, 100_000, summarize=True)
    assert (fit.kept_from, fit.dropped) == (1, 0)


def test_summary_due_covers_what_leaves_the_window_but_never_the_prompt() -> None:
    big = long_pad(20)
    due = summary_due(big, 1_000)
    assert due is not None and due.upto > 2 and due.max_tokens == 200
    transcript = due.request[-1].content or ""
    assert "prompt" not in transcript.split("Transcript:")[1].split("Write the summary")[0]
    after = with_summary(big, due, "  the gist  ")
    assert (after.summary, after.summarized_upto) == ("the gist", due.upto)
    assert summary_due(after, 1_000) is None
    fit = plan_context(after, 1_000, summarize=True)
    assert fit.kept_from == due.upto and fit.dropped > 0


def test_an_empty_summary_keeps_the_previous_one() -> None:
    big = long_pad(20).model_copy(update={"summary": "before"})
    due = summary_due(big, 1_000)
    assert due is not None
    assert with_summary(big, due, "   ").summary == "before"


def test_compacted_messages_count_as_dropped() -> None:
    fit = plan_context(long_pad(1).model_copy(update={"compacted": 7}), 100_000, summarize=False)
    assert fit.dropped == 7


# --- status and current details -------------------------------------------------------------


def pending(kind: WaitKind = RequestKind.APPROVAL) -> PendingRequest:
    return PendingRequest(
        kind=kind,
        call_id="c1",
        tool="write_file" if kind == "approval" else "ask_user",
        args={"path": "a.txt"},
        args_digest="d",
        question="Which file?" if kind == "question" else None,
        requested_at=NOW,
        command="temporal workflow signal --workflow-id w-1 --name approve "
        """--input '{"call_id": "c1"}'""",
    )


def test_tools_phase_shows_whether_a_person_is_awaited() -> None:
    assert visible_phase("running_tools", waiting=True) == "waiting_for_human"
    assert visible_phase("waiting_for_human", waiting=False) == "running_tools"
    assert visible_phase("thinking", waiting=True) == "thinking"


def test_status_is_computed_from_the_scratchpad() -> None:
    steps = [step(f"c{i}") for i in range(7)]
    state = pad(iteration=3, steps=steps, steps_omitted=2, usage=usage(9), model="m")
    status = run_status(
        state, phase="running_tools", max_iterations=10, stop_reason=None, pending=[pending()]
    )
    assert (status.phase, status.iteration, status.steps, status.model) == (
        "waiting_for_human",
        3,
        9,
        "m",
    )
    assert [s.call_id for s in status.recent_steps] == ["c2", "c3", "c4", "c5", "c6"]
    assert status.usage.total_tokens == 9 and status.pending == [pending()]


def test_details_put_commands_in_code_spans() -> None:
    status = AgentStatus(
        phase="waiting_for_human", iteration=2, max_iterations=10, steps=1, pending=[pending()]
    )
    details = current_details(status)
    assert details.startswith("turn 2 of 10: waiting for human · 0 tokens · 1 tool call\n")
    assert 'waiting for approval: `write_file {"path": "a.txt"}`' in details
    assert f"\n\n`{pending().command}`" in details


def test_details_of_a_question_and_of_the_end() -> None:
    question = AgentStatus(phase="waiting_for_human", pending=[pending(RequestKind.QUESTION)])
    assert "waiting for an answer: `Which file?`" in current_details(question)
    plan = new_plan(Plan.model_validate({"steps": [{"goal": "a"}, {"goal": "b"}]}))
    planned = AgentStatus(phase="running_tools", plan=with_status(plan, 0, "done"))
    assert "plan:\n\n- ✓ 1. a\n- · 2. b" in current_details(planned)
    done = AgentStatus(phase="done", stop_reason="completed", iteration=3, usage=usage(40))
    assert current_details(done) == "done (completed) after 3 turns · 40 tokens"
    limited = done.model_copy(update={"stop_reason": StopReason.MAX_ITERATIONS})
    assert current_details(limited) == (
        "done (max_iterations, no answer) after 3 turns · 40 tokens"
    )
    cancelled = AgentStatus(phase="cancelled", iteration=2, steps=1, usage=usage(30))
    assert current_details(cancelled) == "cancelled at turn 2 after 1 tool call · 30 tokens"


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("plain", "`plain`"),
        ("a `tick`", "`` a `tick` ``"),
        ("`x`", "`` `x` ``"),
        ("two `` ticks", "```two `` ticks```"),
    ],
)
def test_code_span_holds_any_text(text: str, span: str) -> None:
    assert code_span(text) == span
