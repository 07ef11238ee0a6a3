"""What a long run carries across continue-as-new stays bounded, however long the run."""

from __future__ import annotations

from datetime import UTC, datetime

from durable_agents.contracts.agent_result import ToolStep
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.scratchpad import RepetitionState, Scratchpad
from durable_agents.loop.continuation import (
    CARRY_LIMIT_BYTES,
    MAX_KEPT_STEPS,
    carried_bytes,
    compact_for_carry,
    compact_steps,
)
from durable_agents.loop.repetition import (
    REMEMBERED_KEYS,
    REMEMBERED_OBSERVATION_CHARS,
    call_key,
    observe_round,
    screen_round,
)
from durable_agents.loop.tool_requests import ToolRequest

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def step(index: int, chars: int) -> ToolStep:
    return ToolStep(
        iteration=index,
        call_id=f"c{index}",
        tool="fixed_output",
        raw_arguments=f'{{"n": {index}}}',
        args={"n": index},
        observation="x" * chars,
        status="ok",
        started_at=NOW,
        finished_at=NOW,
    )


def long_run(iterations: int, chars: int) -> Scratchpad:
    messages = [ChatMessage.system("s"), ChatMessage.user("p")]
    for index in range(iterations):
        call = ToolCall(id=f"c{index}", name="fixed_output", arguments=f'{{"n": {index}}}')
        messages += [
            ChatMessage(role="assistant", tool_calls=[call]),
            ChatMessage.tool_result(call.id, "x" * chars),
        ]
    state = RepetitionState()
    for index in range(iterations):
        request = ToolRequest(
            ToolCall(id=f"c{index}", name="fixed_output", arguments="{}"), {"n": index}
        )
        state = screen_round(state, [request], 3).state
        state = observe_round(state, [request], [("x" * chars, False)], 3).state
    return Scratchpad(
        messages=messages,
        steps=[step(i, chars) for i in range(iterations)],
        iteration=iterations,
        repetition=state,
    )


def test_a_thousand_iteration_run_carries_well_under_the_payload_limit() -> None:
    pad = long_run(1_500, 2_000)
    assert carried_bytes(pad) > 5_000_000  # what a naive carry would weigh
    carried = compact_for_carry(pad, max_context_tokens=100_000, summarize=False)
    assert carried_bytes(carried) <= CARRY_LIMIT_BYTES
    assert len(carried.steps) == MAX_KEPT_STEPS
    assert carried.steps_omitted == 500
    assert carried.steps[-1].iteration == 1_499  # the most recent steps are the ones kept
    assert carried.compacted > 0 and carried.messages[1].content == "p"
    # What the loop needs to go on guarding repetition survives the carry.
    assert carried.repetition.calls == pad.repetition.calls


def test_huge_observations_are_shortened_oldest_first() -> None:
    steps = [step(i, 50_000) for i in range(10)]
    compacted = compact_steps(steps, budget_chars=120_000)
    assert sum(len(s.observation) for s in compacted) <= 120_000
    assert len(compacted[-1].observation) == 50_000  # the newest stays whole
    assert compacted[0].observation.endswith(
        "full text is in the tool activity's result in history]"
    )


def test_error_keys_do_not_keep_the_error_text() -> None:
    state = RepetitionState()
    request = ToolRequest(ToolCall(id="c", name="t", arguments="{}"), {"a": 1})
    long_error = "Error: " + "e" * 50_000
    state = observe_round(state, [request], [(long_error, True)], 3).state
    assert state.errors  # the error is counted, under a short key
    assert all(len(key) < 100 for key in state.errors)


def test_repetition_state_keeps_the_most_recent_keys_and_short_quotes() -> None:
    requests = [
        ToolRequest(ToolCall(id=f"c{i}", name="t", arguments="{}"), {"n": i})
        for i in range(REMEMBERED_KEYS + 10)
    ]
    state = screen_round(RepetitionState(), requests, 3).state
    state = observe_round(state, requests, [("x" * 5_000, False)] * len(requests), 3).state
    assert len(state.calls) == len(state.last_observation) == REMEMBERED_KEYS
    assert call_key(requests[-1]) in state.calls  # the newest are kept
    assert call_key(requests[0]) not in state.calls  # the oldest forgotten
    assert all(len(v) <= REMEMBERED_OBSERVATION_CHARS for v in state.last_observation.values())
