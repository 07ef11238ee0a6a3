"""`StopReason` alone: what each reason means for what follows."""

from __future__ import annotations

from durable_agents.cli.errors import OK, RUN_INCOMPLETE, exit_code_for
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.stop_reason import StopReason


def test_only_an_answer_or_a_stop_tool_answered() -> None:
    answered = {r for r in StopReason if r.answered}
    assert answered == {StopReason.COMPLETED, StopReason.STOPPED_BY_TOOL}


def test_every_reason_says_what_follows() -> None:
    for reason in StopReason:
        assert exit_code_for(reason) == (OK if reason.answered else RUN_INCOMPLETE)
        assert (reason.incomplete_note is None) == reason.answered
        assert reason.description
    assert StopReason.PLAN_REJECTED.incomplete_note == "its plan was rejected (max_replans)"
    assert StopReason.MAX_ITERATIONS.description == (
        "stopped: it reached its limit of model calls (max_iterations)"
    )


def test_the_json_is_the_string_it_always_was() -> None:
    result = AgentResult.model_validate(
        {"answer": "a", "stop_reason": "plan_rejected", "iterations": 1, "steps": [],
         "usage": {}, "model": "m"}
    )  # fmt: skip
    assert result.stop_reason is StopReason.PLAN_REJECTED
    assert result.model_dump(mode="json")["stop_reason"] == "plan_rejected"
    assert result.model_dump_json().count('"stop_reason":"plan_rejected"') == 1
