"""Fallback models over real HTTP: the real `openai` client against the fake server, which
answers per model. A model falls back when its retries are used up or the provider refuses the
model itself (401/403/404); a request the provider rejects (400) is never hidden."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from durable_agents.contracts.errors import MODEL_CALL_FAILED
from durable_agents.testing import fake_openai as fake
from tests.conftest import AgentHarness


def per_model(replies: dict[str, Any]) -> Any:
    """A handler answering each model with its own reply (a callable gets the body)."""

    def handle(body: dict[str, Any]) -> Any:
        reply = replies[body["model"]]
        return reply(body) if callable(reply) else reply

    return handle


def asked(agent: AgentHarness) -> list[str]:
    return [request["model"] for request in agent.fake.requests]


async def summaries(handle: WorkflowHandle[Any, Any]) -> list[str]:
    history = await handle.fetch_history()
    return [
        e.user_metadata.summary.data.decode().strip('"')
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
    ]


async def test_a_dead_primary_falls_back_after_its_retries(agent: AgentHarness) -> None:
    agent.fake.set_handler(
        per_model({"primary": fake.error(503, "overloaded"), "backup": fake.text("from backup")})
    )
    result, handle = await agent.run(
        {
            "prompt": "hi",
            "model": "primary",
            "fallback_models": ["backup"],
            "model_max_attempts": 2,
        }
    )

    assert (result.answer, result.model) == ("from backup", "backup")
    assert asked(agent) == ["primary", "primary", "backup"]
    [record] = result.model_calls
    assert record.model == "backup"
    assert [(f.model, "503" in f.error) for f in record.failed_models] == [("primary", True)]
    # the Web UI names the model each activity asked
    assert await summaries(handle) == ["primary · turn 1", "backup · turn 1"]


@pytest.mark.parametrize("status", [401, 403, 404])
async def test_a_refused_model_falls_back_at_once(agent: AgentHarness, status: int) -> None:
    agent.fake.set_handler(
        per_model({"gone": fake.error(status, "no such model"), "backup": fake.text("ok")})
    )
    result, _ = await agent.run(
        {"prompt": "hi", "model": "gone", "fallback_models": ["backup"], "model_max_attempts": 5}
    )

    assert result.answer == "ok"
    assert asked(agent) == ["gone", "backup"]  # not retried: the model itself was refused
    assert (
        result.model_calls[0].failed_models[0].error.startswith(f"model provider answered {status}")
    )


async def test_a_rejected_request_is_not_hidden_by_a_fallback(agent: AgentHarness) -> None:
    agent.fake.set_handler(
        per_model(
            {
                "primary": fake.error(400, "This model's maximum context length is 8192 tokens"),
                "backup": fake.text("should not be asked"),
            }
        )
    )
    handle = await agent.start({"prompt": "hi", "model": "primary", "fallback_models": ["backup"]})
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()

    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == MODEL_CALL_FAILED
    assert "maximum context length" in cause.message
    assert set(asked(agent)) == {"primary"}  # the backup was never asked


async def test_every_model_failing_names_each_failure(agent: AgentHarness) -> None:
    agent.fake.set_handler(
        per_model({"a": fake.error(404, "model a not found"), "b": fake.error(401, "bad key b")})
    )
    handle = await agent.start({"prompt": "hi", "model": "a", "fallback_models": ["b"]})
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()

    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == MODEL_CALL_FAILED
    assert "every model failed: a: model provider answered 404: model a not found" in cause.message
    assert "b: model provider answered 401: bad key b" in cause.message


async def test_the_primary_is_tried_first_on_every_call(agent: AgentHarness) -> None:
    flaky = iter([fake.error(404, "briefly gone"), fake.text("primary again")])
    agent.fake.set_handler(
        per_model(
            {
                "primary": lambda body: next(flaky),
                "backup": fake.tool_calls(fake.call("calculator", {"expression": "1+1"})),
            }
        )
    )
    result, _ = await agent.run({"prompt": "hi", "model": "primary", "fallback_models": ["backup"]})
    assert asked(agent) == ["primary", "backup", "primary"]
    assert [c.model for c in result.model_calls] == ["backup", "primary"]
    assert result.answer == "primary again"


async def test_prices_and_budgets_apply_to_the_model_that_answered(agent: AgentHarness) -> None:
    agent.fake.set_handler(
        per_model(
            {"cheap": fake.error(404), "dear": fake.text("pricey", usage=(1_000_000, 1_000_000))}
        )
    )
    result, _ = await agent.run(
        {
            "prompt": "hi",
            "model": "cheap",
            "fallback_models": ["dear"],
            "cost_budget": {
                "max_usd": 100,
                "prices": {
                    "cheap": {"input_per_million": 0.1, "output_per_million": 0.1},
                    "dear": {"input_per_million": 5, "output_per_million": 15},
                },
            },
        }
    )
    assert result.cost_usd == pytest.approx(20.0)


async def test_bad_fallback_names_are_refused(agent: AgentHarness) -> None:
    handle = await agent.start({"prompt": "hi", "fallback_models": ["ok", " "]})
    with pytest.raises(WorkflowFailureError) as failure:
        await handle.result()
    assert "fallback_models" in str(failure.value.cause)
    assert agent.fake.request_count == 0
