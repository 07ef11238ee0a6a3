"""Bad tools, bad replies, bad providers: every failure either goes back to the model as an
observation or ends the run with a clear error; nothing is stuck retrying a workflow task.

What the loop does with a reply runs on the scripted in-memory model; what a provider sends over
the wire (reasoning fields, HTTP errors, malformed bodies) on the real `openai` client and the
fake server."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.errors import MODEL_CALL_FAILED, TOOL_FAILED_RUN
from durable_agents.contracts.messages import ChatMessage
from durable_agents.loop.limits import max_iterations_message
from durable_agents.loop.model_reply import EMPTY_ANSWER_MESSAGE, EMPTY_REPLY_NUDGE
from durable_agents.testing import fake_openai as fake
from tests import scripted_model as sm
from tests.conftest import (
    SECRET_API_KEY,
    AgentHarness,
    ScriptedHarness,
    activity_types,
    history_json,
)


def failure_cause(error: WorkflowFailureError) -> ApplicationError:
    cause = error.cause
    assert isinstance(cause, ApplicationError)
    return cause


async def test_tool_error_goes_back_to_the_model_instead_of_failing(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("refuses", {"text": "x"}), sm.call("always_fails", {"text": "y"})),
        sm.text("I could not do it."),
    )
    result, handle = await scripted_agent.run(
        {"prompt": "try", "tools": ["refuses", "always_fails"]}
    )

    assert result.stop_reason == "completed"
    assert [(s.status, s.observation) for s in result.steps] == [
        ("error", "Error: cannot do that with 'x'"),
        ("error", "Error: the tool failed after 3 attempts: disk on fire (y)"),
    ]
    sent = [m.content for m in scripted_agent.model.requests[1].messages if m.role == "tool"]
    assert sent == [s.observation for s in result.steps]
    assert await activity_types(handle) == ["call_model", "refuses", "always_fails", "call_model"]


async def test_transient_tool_failure_is_retried_by_temporal(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(sm.tool_calls(sm.call("flaky", {"failures": 2})), sm.text("ok"))
    result, _ = await scripted_agent.run({"prompt": "try", "tools": ["flaky"]})
    assert result.steps[0].status == "ok"
    assert result.steps[0].observation == "worked on attempt 3"


async def test_tool_timeout_becomes_an_observation(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(sm.tool_calls(sm.call("sleepy", {"seconds": 30})), sm.text("slow"))
    result, _ = await scripted_agent.run({"prompt": "wait", "tools": ["sleepy"]})
    assert result.steps[0].status == "error"
    assert result.steps[0].observation == "Error: timed out after 1s"


async def test_tool_with_on_error_stop_fails_the_run(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(sm.tool_calls(sm.call("must_work", {"text": "db"})))
    handle = await scripted_agent.start({"prompt": "go", "tools": ["must_work"]})
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    cause = failure_cause(caught.value)
    assert cause.type == TOOL_FAILED_RUN
    assert "critical failure: db" in cause.message


async def test_unknown_tool_and_bad_arguments_become_observations(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("launch_missiles", {"target": "moon"}, id="c1"),
            sm.call("calculator", "{not json", id="c2"),
            sm.call("calculator", {"expr": "1+1"}, id="c3"),
            sm.call("calculator", "[1, 2]", id="c4"),
            sm.call("read_file", {"path": "notes.txt"}, id="c5"),
        ),
        sm.text("sorry"),
    )
    result, handle = await scripted_agent.run({"prompt": "x", "tools": ["calculator", "echo"]})

    observations = {s.call_id: s.observation for s in result.steps}
    assert observations["c1"] == (
        "Error: unknown tool 'launch_missiles'. Available tools: calculator, echo."
    )
    assert observations["c2"].startswith(
        "Error: tool 'calculator': the arguments are not valid JSON"
    )
    assert observations["c3"].startswith("Error: tool 'calculator': invalid arguments: expression:")
    assert "must be a JSON object" in observations["c4"]
    # A registered tool outside the run's allowlist is as unknown as a hallucinated one.
    assert observations["c5"].startswith("Error: unknown tool 'read_file'")
    assert all(s.status == "error" and s.args is None for s in result.steps)
    assert result.steps[1].raw_arguments == "{not json"
    assert await activity_types(handle) == ["call_model", "call_model"]


async def test_loop_stops_after_max_iterations(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.set_handler(
        lambda request: sm.tool_calls(sm.call("echo", {"text": "again"}))
    )
    result, handle = await scripted_agent.run(
        {"prompt": "loop", "tools": ["echo"], "max_iterations": 3}
    )

    assert result.stop_reason == "max_iterations"
    assert result.answer == max_iterations_message(3)
    assert result.answer.startswith("Max iterations (3) reached.")
    assert result.iterations == 3
    assert len(result.steps) == 2  # tools of the last turn do not run: no turn is left to read them
    assert scripted_agent.model.request_count == 3
    assert await activity_types(handle) == [
        "call_model", "echo", "call_model", "echo", "call_model",
    ]  # fmt: skip


async def test_empty_reply_is_asked_again_then_answered(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(sm.text("", reasoning_content="thinking..."), sm.text("42"))
    result, _ = await scripted_agent.run({"prompt": "meaning of life?"})
    assert (result.answer, result.stop_reason, result.iterations) == ("42", "completed", 2)
    assert scripted_agent.model.requests[1].messages[-1] == ChatMessage.user(EMPTY_REPLY_NUDGE)


async def test_empty_reply_twice_stops_with_a_clear_reason(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(sm.text(""), sm.text("   "))
    result, _ = await scripted_agent.run({"prompt": "?"})
    assert (result.answer, result.stop_reason) == (EMPTY_ANSWER_MESSAGE, "empty_answer")


async def test_reasoning_content_is_kept_and_sent_back(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.tool_calls(fake.call("echo", {"text": "a"}), reasoning_content="I should echo."),
        fake.text("done"),
    )
    await agent.run({"prompt": "x", "tools": ["echo"]})
    assistant = agent.fake.requests[1]["messages"][2]
    assert assistant["role"] == "assistant"
    assert assistant["reasoning_content"] == "I should echo."


async def test_oversized_tool_output_is_truncated_before_history(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("big_output", {"chars": 500_000})), sm.text("ok")
    )
    result, handle = await scripted_agent.run(
        {"prompt": "x", "tools": ["big_output"], "max_observation_chars": 1000}
    )
    observation = result.steps[0].observation
    assert len(observation) <= 1000
    assert observation.endswith("of 500000 characters ...]")
    assert len(await history_json(handle)) < 100_000


async def test_missing_and_repeated_tool_call_ids_are_made_unique(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("echo", {"text": "a"}, id=""), sm.call("echo", {"text": "b"}, id="")),
        sm.text("ok"),
    )
    result, _ = await scripted_agent.run({"prompt": "x", "tools": ["echo"]})
    assert [s.call_id for s in result.steps] == ["call_1_0", "call_1_1"]
    sent = [m.tool_call_id for m in scripted_agent.model.requests[1].messages if m.role == "tool"]
    assert sent == ["call_1_0", "call_1_1"]


async def test_rate_limit_with_retry_after_is_retried_and_succeeds(agent: AgentHarness) -> None:
    seen: list[float] = []
    replies: list[Any] = [
        fake.error(429, "slow down", headers={"retry-after-ms": "2500"}),
        fake.text("made it"),
    ]

    def handler(body: dict[str, Any]) -> Any:
        seen.append(time.monotonic())
        return replies.pop(0)

    agent.fake.set_handler(handler)
    result, handle = await agent.run({"prompt": "x"})
    assert result.answer == "made it"
    assert len(seen) == 2
    # The provider's retry-after-ms (2.5 s), not the default 1 s backoff, set the delay.
    assert seen[1] - seen[0] >= 2.4
    assert await activity_types(handle) == ["call_model"]


async def test_server_errors_and_malformed_bodies_are_retried(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.error(503, "overloaded"),
        fake.raw(200, b'{"id": "x", "choices": [ {"trunc'),
        fake.text("finally"),
    )
    result, _ = await agent.run({"prompt": "x"})
    assert result.answer == "finally"
    assert agent.fake.request_count == 3


async def test_unauthorized_fails_fast_with_the_provider_message(agent: AgentHarness) -> None:
    agent.fake.enqueue(fake.error(401, f"Incorrect API key provided: {SECRET_API_KEY}"))
    handle = await agent.start({"prompt": "x"})
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    cause = failure_cause(caught.value)
    assert cause.type == MODEL_CALL_FAILED
    assert "401" in cause.message
    assert "Incorrect API key provided: ***" in cause.message
    assert agent.fake.request_count == 1  # not retried
    assert SECRET_API_KEY not in await history_json(handle)


async def test_model_retries_are_bounded(agent: AgentHarness) -> None:
    agent.fake.set_handler(lambda body: fake.error(500, "always broken"))
    handle = await agent.start({"prompt": "x", "model_max_attempts": 2})
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    assert "always broken" in failure_cause(caught.value).message
    assert agent.fake.request_count == 2


def completion_body(message: dict[str, Any]) -> str:
    return json.dumps(
        {
            "id": "chatcmpl-raw",
            "object": "chat.completion",
            "created": 0,
            "model": "raw-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
    )


async def test_empty_tool_call_list_is_a_plain_answer(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.raw(200, completion_body({"role": "assistant", "content": "hi", "tool_calls": []}))
    )
    result, _ = await agent.run({"prompt": "x"})
    assert (result.answer, result.steps) == ("hi", [])
    # The body has no usage: the tokens are an estimate, and say so.
    assert result.usage.estimated and result.usage.total_tokens > 0


async def test_structurally_malformed_tool_calls_are_handled(agent: AgentHarness) -> None:
    agent.fake.enqueue(
        fake.raw(
            200,
            completion_body(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "a", "type": "function", "function": {"name": "echo"}},
                        {"id": "b", "type": "function", "function": {"arguments": "{}"}},
                    ],
                }
            ),
        ),
        fake.text("recovered"),
    )
    result, _ = await agent.run({"prompt": "x", "tools": ["echo"]})
    assert result.answer == "recovered"
    first, second = result.steps
    assert first.observation.startswith("Error: tool 'echo': invalid arguments: text:")
    assert second.observation.startswith("Error: unknown tool ''")
