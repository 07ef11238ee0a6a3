"""Repeated-action detection (`loop.repetition`): identical calls and identical errors are warned
once, then stop the run."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from durable_agents.contracts.agent_result import StepStatus, ToolStep
from durable_agents.contracts.approvals import HumanDecision, RepeatOf
from durable_agents.contracts.messages import ToolCall
from durable_agents.contracts.request_kind import RequestKind
from durable_agents.contracts.scratchpad import RepetitionState
from durable_agents.loop.repetition import (
    RepeatScreen,
    call_key,
    error_key,
    error_warning,
    key_of,
    observe_round,
    remember_successes,
    repeat_text,
    repeat_warning,
    repeated_calls_message,
    screen_repeat,
    screen_round,
)
from durable_agents.loop.tool_requests import PlannedCall, RefusedCall, ToolRequest

_ids = iter(range(1_000_000))


def request(tool: str = "web_search", **args: Any) -> ToolRequest:
    """A validated call; each gets a fresh id, as the model's calls do."""
    return ToolRequest(ToolCall(id=f"call_{next(_ids)}", name=tool, arguments="{}"), args)


def refused(tool: str, observation: str) -> RefusedCall:
    return RefusedCall(ToolCall(id=f"call_{next(_ids)}", name=tool, arguments="{}"), observation)


def run_round(
    state: RepetitionState,
    planned: list[PlannedCall],
    results: list[tuple[str, bool]] | None,
    max_repeats: int,
) -> tuple[list[PlannedCall], list[str], RepetitionState, str | None]:
    """Screen, then 'run' what passed: a ToolRequest yields the next result, a RefusedCall its
    own observation as an error (as the workflow does). Returns (calls, observations, state,
    stop_tool)."""
    screened = screen_round(state, planned, max_repeats)
    if screened.stop_tool:
        return screened.calls, [], screened.state, screened.stop_tool
    pending = list(results or [])
    outcomes = [
        pending.pop(0) if isinstance(item, ToolRequest) else (item.observation, True)
        for item in screened.calls
    ]
    observed = observe_round(screened.state, screened.calls, outcomes, max_repeats)
    return screened.calls, observed.observations, observed.state, observed.stop_tool


# --- identical calls --------------------------------------------------------------------------


@pytest.mark.parametrize("max_repeats", [2, 3, 5])
def test_nth_identical_call_is_refused_with_the_last_result_then_stops(max_repeats: int) -> None:
    state = RepetitionState()
    key = call_key(request(q="temporal"))
    for n in range(1, max_repeats):
        call = request(q="temporal")
        calls, observations, state, stop = run_round(
            state, [call], [(f"result {n}", False)], max_repeats
        )
        assert calls == [call]
        assert observations == [f"result {n}"]
        assert stop is None
        assert state.calls[key] == n
        assert state.last_observation[key] == f"result {n}"
    call = request(q="temporal")
    calls, observations, state, stop = run_round(state, [call], None, max_repeats)
    assert stop is None
    [warning] = calls
    assert isinstance(warning, RefusedCall)
    assert warning.call == call.call
    assert warning.observation.startswith(
        "Error: you already called web_search with these exact arguments"
    )
    assert f"{max_repeats - 1} times" in warning.observation
    assert f"the result was: result {max_repeats - 1}." in warning.observation
    assert warning.observation == repeat_warning(
        "web_search", max_repeats - 1, f"result {max_repeats - 1}"
    )
    assert observations == [warning.observation]
    assert key in state.warned
    assert state.calls[key] == max_repeats - 1  # the refused call did not run
    assert state.errors == {}, "the warning is not an error of the tool"

    again = screen_round(state, [request(q="temporal")], max_repeats)
    assert again.stop_tool == "web_search"
    assert "web_search" in repeated_calls_message("web_search")


def test_the_quoted_result_is_flattened_and_shortened() -> None:
    state = RepetitionState()
    long_result = "line one\nline two " + "x" * 2000
    _, _, state, _ = run_round(state, [request(q=1)], [(long_result, False)], 2)
    [warning] = screen_round(state, [request(q=1)], 2).calls
    assert isinstance(warning, RefusedCall)
    assert "the result was: line one line two xxx" in warning.observation
    assert "…. Do not repeat it" in warning.observation
    assert len(warning.observation) < 700


def test_different_arguments_and_tools_are_counted_separately() -> None:
    state = RepetitionState()
    for _ in range(2):
        screened = screen_round(
            state, [request(q="a"), request(q="b"), request("read_file", q="a")], 3
        )
        assert all(isinstance(c, ToolRequest) for c in screened.calls)
        state = screened.state
    assert state.calls == {
        call_key(request(q="a")): 2,
        call_key(request(q="b")): 2,
        call_key(request("read_file", q="a")): 2,
    }
    assert state.warned == []
    third = screen_round(state, [request(q="a"), request(q="c")], 3)
    assert isinstance(third.calls[0], RefusedCall)
    assert isinstance(third.calls[1], ToolRequest)


def test_argument_key_order_does_not_matter() -> None:
    first = request(a=1, b={"x": 1, "y": [1, 2]})
    second = ToolRequest(
        ToolCall(id="other", name="web_search", arguments='{"b":{}, "a":1}'),
        {"b": {"y": [1, 2], "x": 1}, "a": 1},
    )
    assert call_key(first) == call_key(second)
    state = screen_round(RepetitionState(), [first], 2).state
    assert isinstance(screen_round(state, [second], 2).calls[0], RefusedCall)


def test_call_key_differs_on_values_and_tool() -> None:
    assert call_key(request(q=1)) != call_key(request(q="1"))
    assert call_key(request(q=1)) != call_key(request("read_file", q=1))
    assert call_key(request(q=1)).startswith("web_search:")


def test_identical_calls_within_one_round() -> None:
    first, second, third = request(q=1), request(q=1), request(q=1)
    screened = screen_round(RepetitionState(), [first, second], 2)
    assert screened.calls[0] == first
    assert isinstance(screened.calls[1], RefusedCall)
    assert screened.stop_tool is None
    stopped = screen_round(RepetitionState(), [first, second, third], 2)
    assert stopped.stop_tool == "web_search"


def test_refused_calls_from_planning_pass_through_screening() -> None:
    bad = refused("nope", "Error: unknown tool 'nope'. Available tools: web_search.")
    for _ in range(5):
        screened = screen_round(RepetitionState(), [bad, bad, bad], 2)
        assert screened.calls == [bad, bad, bad]
        assert screened.stop_tool is None
        assert screened.state == RepetitionState()


# --- identical errors -------------------------------------------------------------------------


@pytest.mark.parametrize("max_repeats", [2, 3, 4])
def test_nth_identical_error_gets_a_warning_then_stops(max_repeats: int) -> None:
    error = "Error: tool 'web_search' failed: 503 Service Unavailable"
    state = RepetitionState()
    for n in range(1, max_repeats):
        _, observations, state, stop = run_round(
            state, [request(q=n)], [(error, True)], max_repeats
        )
        assert observations == [error]
        assert stop is None
    _, observations, state, stop = run_round(
        state, [request(q="last")], [(error, True)], max_repeats
    )
    assert observations == [error + error_warning(max_repeats)]
    assert f"happened {max_repeats} times" in observations[0]
    assert stop is None
    _, observations, state, stop = run_round(
        state, [request(q="again")], [(error, True)], max_repeats
    )
    assert stop == "web_search"
    assert observations == [error]


def test_errors_count_per_tool_and_text() -> None:
    state = RepetitionState()
    outcomes = [("Error: boom", True), ("Error: bang", True), ("Error: boom", True)]
    planned: list[PlannedCall] = [request(q=1), request(q=2), request("read_file", q=3)]
    observed = observe_round(state, planned, outcomes, 2)
    assert observed.observations == [text for text, _ in outcomes]
    assert observed.state.errors == {
        error_key("web_search", "Error: boom"): 1,
        error_key("web_search", "Error: bang"): 1,
        error_key("read_file", "Error: boom"): 1,
    }
    assert observed.stop_tool is None


def test_non_errors_never_warn_or_stop() -> None:
    state = RepetitionState()
    for n in range(10):
        observed = observe_round(state, [request(q=n)], [("same result", False)], 2)
        assert observed.observations == ["same result"]
        assert observed.stop_tool is None
        state = observed.state
    assert state.errors == {}
    assert state.warned == []


def test_the_repeat_warning_is_not_counted_as_an_error() -> None:
    state = RepetitionState()
    _, _, state, _ = run_round(state, [request(q=1)], [("ok", False)], 2)
    for _ in range(3):
        # each round the same warning text comes back as an error observation
        warning = refused("web_search", repeat_warning("web_search", 1, "ok"))
        observed = observe_round(state, [warning], [(warning.observation, True)], 2)
        assert observed.observations == [warning.observation]
        assert observed.stop_tool is None
        assert observed.state.errors == {}
        state = observed.state


def test_planning_errors_are_counted_like_tool_errors() -> None:
    text = "Error: unknown tool 'nope'. Available tools: web_search."
    state = RepetitionState()
    observed = observe_round(state, [refused("nope", text)], [(text, True)], 2)
    assert observed.observations == [text]
    observed = observe_round(observed.state, [refused("nope", text)], [(text, True)], 2)
    assert observed.observations == [text + error_warning(2)]
    observed = observe_round(observed.state, [refused("nope", text)], [(text, True)], 2)
    assert observed.stop_tool == "nope"


def test_observe_round_records_the_raw_last_observation() -> None:
    error = "Error: boom"
    state = RepetitionState(errors={error_key("web_search", error): 1})
    call = request(q=1)
    observed = observe_round(state, [call], [(error, True)], 2)
    assert observed.observations == [error + error_warning(2)]
    assert observed.state.last_observation == {call_key(call): error}


def test_observe_round_needs_one_outcome_per_call() -> None:
    with pytest.raises(ValueError):
        observe_round(RepetitionState(), [request(q=1)], [], 2)


# --- purity -----------------------------------------------------------------------------------

ARGS = st.dictionaries(
    st.sampled_from(["q", "n", "path"]), st.one_of(st.integers(0, 2), st.sampled_from("ab"))
)


@settings(max_examples=200, deadline=None)
@given(
    rounds=st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(["web_search", "read_file"]),
                ARGS,
                st.sampled_from(["ok", "Error: boom", "Error: bang"]),
            ),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=8,
    ),
    max_repeats=st.integers(2, 4),
)
def test_state_and_inputs_are_never_mutated(
    rounds: list[list[tuple[str, dict[str, Any], str]]], max_repeats: int
) -> None:
    state = RepetitionState()
    for spec in rounds:
        planned: list[PlannedCall] = [request(tool, **args) for tool, args, _ in spec]
        results = {
            id(p): (text, text.startswith("Error"))
            for p, (_, _, text) in zip(planned, spec, strict=True)
        }
        before_state = state.model_dump()
        before_planned = [(p.call, dict(p.args)) for p in planned if isinstance(p, ToolRequest)]
        screened = screen_round(state, planned, max_repeats)
        assert state.model_dump() == before_state
        assert [(p.call, p.args) for p in planned if isinstance(p, ToolRequest)] == before_planned
        if screened.stop_tool:
            assert screened.state == state
            return
        after_screen = screened.state.model_dump()
        outcomes = [
            results[id(item)] if isinstance(item, ToolRequest) else (item.observation, True)
            for item in screened.calls
        ]
        observed = observe_round(screened.state, screened.calls, outcomes, max_repeats)
        assert screened.state.model_dump() == after_screen
        assert state.model_dump() == before_state
        # counters only grow
        for key, count in state.calls.items():
            assert observed.state.calls[key] >= count
        for key, count in state.errors.items():
            assert observed.state.errors[key] >= count
        assert set(state.warned) <= set(observed.state.warned)
        state = observed.state


# --- repeats of a call that succeeded (side effects) -------------------------------------------

WRITE = {"path": "a.txt", "content": "x"}
AT = datetime(2026, 12, 5, tzinfo=UTC)


def step(
    call_id: str,
    args: dict[str, Any] | None = None,
    status: StepStatus = "ok",
    tool: str = "write_file",
    human: HumanDecision | None = None,
) -> ToolStep:
    return ToolStep(
        iteration=1, call_id=call_id, tool=tool, raw_arguments="{}",
        args=WRITE if args is None else args, observation="wrote 1 byte", status=status,
        started_at=AT, finished_at=AT, human=human,
    )  # fmt: skip


def test_a_call_identical_to_one_that_succeeded_is_flagged() -> None:
    """The issue's run: the write is approved and runs; the model sends it again identically.
    The second request names the first call, how often it succeeded and what it returned."""
    state = RepetitionState(last_observation={key_of("write_file", WRITE): "wrote 1 byte"})
    assert screen_repeat(state, "write_file", WRITE, "flag") == RepeatScreen()
    state = remember_successes(state, [step("w1")])
    screened = screen_repeat(state, "write_file", dict(reversed(WRITE.items())), "flag")
    assert screened.refusal is None  # flagged, not refused: the person decides
    assert screened.repeat_of == RepeatOf(call_id="w1", times=1, result="wrote 1 byte")
    state = remember_successes(state, [step("w2")])
    assert screen_repeat(state, "write_file", WRITE, "flag").repeat_of == RepeatOf(
        call_id="w2", times=2, result="wrote 1 byte"
    )


def test_a_refuse_setting_refuses_the_repeat_naming_the_call_and_its_result() -> None:
    state = remember_successes(
        RepetitionState(last_observation={key_of("write_file", WRITE): "wrote 1 byte"}),
        [step("w1")],
    )
    screened = screen_repeat(state, "write_file", WRITE, "refuse")
    assert screened.refusal is not None
    assert screened.refusal.startswith(
        "Error: refused by policy: this exact write_file call (same arguments) already ran and "
        "succeeded once in this run (last as call w1)"
    )
    assert "It returned: wrote 1 byte" in screened.refusal
    assert screen_repeat(state, "write_file", {**WRITE, "content": "y"}, "refuse") == (
        RepeatScreen()
    )


def test_only_calls_that_ran_and_succeeded_count() -> None:
    """Rejected, failed or denied calls did nothing: repeating them is no repeat of an effect.
    An answered question ran nothing either. Edited arguments count as what ran."""
    rejected = HumanDecision(
        call_id="w1", kind=RequestKind.APPROVAL, outcome="rejected", at=AT, model_args=WRITE
    )
    question = HumanDecision(
        call_id="q1", kind=RequestKind.QUESTION, outcome="answered", at=AT, model_args={}
    )
    state = remember_successes(
        RepetitionState(),
        [
            step("w1", status="rejected", human=rejected),
            step("w2", status="error"),
            step("w3", status="denied"),
            step("q1", args={"question": "ok?"}, tool="ask_user", human=question),
            step("w4", args={"path": "b.txt", "content": "edited"}),
        ],
    )
    assert list(state.succeeded) == [key_of("write_file", {"path": "b.txt", "content": "edited"})]
    assert screen_repeat(state, "write_file", WRITE, "refuse") == RepeatScreen()
    assert remember_successes(state, [step("w5", status="error")]) is state


def test_the_repeat_is_shown_to_the_person_asked() -> None:
    repeat = RepeatOf(call_id="w1", times=2, result="wrote [1](http://x) byte")
    assert repeat_text(repeat) == (
        "repeat: this exact call (same tool, same arguments) already ran and succeeded 2 times "
        "in this run (last as call w1); it returned: wrote [1](http://x) byte. Approving runs "
        "it again."
    )
