"""`tests.scripted_model`: the in-memory model answers like `OpenAIChatModel` over the fake
server would (same ids, usage, model name, errors), so loop tests can move to it unchanged."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.errors import MODEL_REQUEST_REJECTED, MODEL_UNAVAILABLE
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelRequest
from durable_agents.contracts.usage import TokenUsage
from testkit.eventually import eventually
from tests import scripted_model as sm


def request(text: str = "hi", model: str | None = None) -> ModelRequest:
    return ModelRequest(model=model, messages=[ChatMessage.system("s"), ChatMessage.user(text)])


async def test_text_and_tool_calls_become_model_replies() -> None:
    model = sm.ScriptedChatModel(default_model="m-1")
    model.enqueue(
        sm.tool_calls(sm.call("echo", {"text": "a"}, id="c1"), sm.call("calc", "{bad")),
        sm.text("done", usage=(30, 7), reasoning_content="why"),
        "shorthand",
    )
    first = await model.complete(request())
    assert first.model == "m-1"
    assert first.content is None and first.finish_reason == "tool_calls"
    assert first.tool_calls == [
        ToolCall(id="c1", name="echo", arguments='{"text": "a"}'),
        ToolCall(id="call_1", name="calc", arguments="{bad"),  # generated, raw arguments kept
    ]
    assert first.usage == TokenUsage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
    second = await model.complete(request(model="other"))
    assert (second.content, second.model, second.finish_reason) == ("done", "other", "stop")
    assert second.reasoning_content == "why"
    assert second.usage.total_tokens == 37
    assert (await model.complete(request())).content == "shorthand"
    assert [r.model for r in model.requests] == [None, "other", None]
    assert model.served == 3 and model.pending_replies == 0 and model.errors == []


async def test_queue_takes_precedence_over_the_handler_which_sees_the_request() -> None:
    model = sm.ScriptedChatModel()
    model.set_handler(
        lambda r: sm.text(f"{len(r.messages)} messages, last {r.messages[-1].content}")
    )
    model.enqueue(sm.text("from queue"))
    assert (await model.complete(request())).content == "from queue"
    assert (await model.complete(request("yo"))).content == "2 messages, last yo"
    assert model.last_request.messages[-1].content == "yo"


async def test_errors_raise_application_errors_like_a_real_backend() -> None:
    model = sm.ScriptedChatModel()
    model.enqueue(
        sm.error("overloaded", next_retry_delay=timedelta(seconds=2)), sm.rejected("bad request")
    )
    with pytest.raises(ApplicationError) as transient:
        await model.complete(request())
    assert (transient.value.type, transient.value.non_retryable) == (MODEL_UNAVAILABLE, False)
    assert transient.value.next_retry_delay == timedelta(seconds=2)
    with pytest.raises(ApplicationError) as refused:
        await model.complete(request())
    assert (refused.value.type, refused.value.non_retryable) == (MODEL_REQUEST_REJECTED, True)
    assert refused.value.message == "bad request"
    assert model.served == 0 and model.errors == []  # scripted failures are not script errors


async def test_an_exhausted_script_or_a_broken_handler_fails_without_retry() -> None:
    model = sm.ScriptedChatModel()
    with pytest.raises(ApplicationError) as exhausted:
        await model.complete(request())
    assert exhausted.value.non_retryable and "script exhausted" in str(exhausted.value)

    def broken(r: ModelRequest) -> sm.ReplyLike:
        raise RuntimeError("boom")

    model.set_handler(broken)
    with pytest.raises(ApplicationError, match="boom") as crashed:
        await model.complete(request())
    assert crashed.value.non_retryable
    assert len(model.errors) == 2 and "boom" in model.errors[1]


async def test_a_gate_holds_the_reply_until_released() -> None:
    model = sm.ScriptedChatModel()
    release = asyncio.Event()
    model.enqueue(sm.gate(release, sm.text("released")))
    answer = asyncio.create_task(model.complete(request()))
    await eventually(lambda: model.request_count == 1)
    assert not answer.done() and model.served == 0
    release.set()
    assert (await answer).content == "released"


async def test_a_cancelled_wait_is_recorded() -> None:
    model = sm.ScriptedChatModel()
    model.enqueue(sm.hang())
    waiting = asyncio.create_task(model.complete(request("stuck")))
    await eventually(lambda: model.request_count == 1)  # recorded, then waiting at the gate
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert [r.messages[-1].content for r in model.cancelled] == ["stuck"]
    assert model.served == 0
