"""Hallucinated tool calls (seed 000, issue 23 item 2): when every call of a reply names a tool the
run does not have and the reply has text, the text is the answer and the calls are recorded as
dropped in the model call; when some calls are known, each unknown one gets the `unknown tool`
observation as before; `unknown_tools: observe` keeps the old behaviour for every reply.

The decision is `loop.model_reply.drop_unknown_calls` (pure, unit-tested here).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from durable_agents.contracts.agent_result import ModelCall
from durable_agents.contracts.messages import ToolCall
from durable_agents.contracts.model_io import ModelReply
from durable_agents.contracts.scratchpad import Scratchpad
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.model_reply import drop_unknown_calls, with_dropped_calls
from tests import scripted_model as sm
from tests.conftest import ScriptedHarness, activity_types
from tests.replaying import assert_replays


def reply(content: str | None, *names: str) -> ModelReply:
    calls = [ToolCall(id=f"c{i}", name=name, arguments="{}") for i, name in enumerate(names)]
    return ModelReply(model="m", content=content, tool_calls=calls, finish_reason="tool_calls")


# -- the decision ----------------------------------------------------------------------------------


def test_only_unknown_calls_with_text_make_the_text_the_answer() -> None:
    dropped = drop_unknown_calls(
        reply("It is 4.", "web_search", "browse"), ["calculator"], "answer_with_text"
    )
    assert dropped is not None
    assert dropped.reply.tool_calls == [] and dropped.reply.content == "It is 4."
    assert [c.name for c in dropped.calls] == ["web_search", "browse"]


def test_known_calls_no_text_or_observe_keep_the_calls() -> None:
    offered = ["calculator"]
    assert (
        drop_unknown_calls(reply("x", "calculator", "web_search"), offered, "answer_with_text")
        is None
    )
    assert drop_unknown_calls(reply("  \n", "web_search"), offered, "answer_with_text") is None
    assert drop_unknown_calls(reply(None, "web_search"), offered, "answer_with_text") is None
    assert drop_unknown_calls(reply("x", "web_search"), offered, "observe") is None
    assert drop_unknown_calls(reply("x"), offered, "answer_with_text") is None


def test_the_latest_model_call_records_what_was_dropped() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    record = ModelCall(
        turn=1, purpose="turn", model="m", usage=TokenUsage(), tool_calls=1,
        finish_reason="tool_calls", started_at=now, finished_at=now,
    )  # fmt: skip
    pad = Scratchpad(messages=[], model_calls=[record, record.model_copy(update={"turn": 2})])
    dropped = [ToolCall(id="a", name="web_search", arguments="{}")]

    recorded = with_dropped_calls(pad, dropped)

    assert [c.dropped_calls for c in recorded.model_calls] == [[], dropped]
    assert "dropped_calls" not in recorded.model_calls[0].model_dump(mode="json")
    assert with_dropped_calls(Scratchpad(messages=[]), dropped) == Scratchpad(messages=[])


# -- through a run ---------------------------------------------------------------------------------


async def test_a_reply_naming_only_unknown_tools_is_answered_by_its_text(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("web_search", {"q": "17 * 25"}, id="w1"),
            sm.call("browse", {"url": "x"}, id="w2"),
            content="17 * 25 is 425.",
        ),
        sm.text("never asked"),
    )
    result, handle = await scripted_agent.run(
        {"prompt": "What is 17 * 25?", "tools": ["calculator"]}
    )

    assert (result.answer, result.stop_reason) == ("17 * 25 is 425.", "completed")
    assert result.steps == [] and result.iterations == 1
    [model_call] = result.model_calls
    assert [(c.id, c.name, json.loads(c.arguments)) for c in model_call.dropped_calls] == [
        ("w1", "web_search", {"q": "17 * 25"}),
        ("w2", "browse", {"url": "x"}),
    ]
    assert model_call.tool_calls == 2
    assert await activity_types(handle) == ["call_model"]  # no second model call
    await assert_replays(await handle.fetch_history())


async def test_unknown_calls_beside_a_known_one_get_an_observation(
    scripted_agent: ScriptedHarness,
) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(
            sm.call("calculator", {"expression": "17 * 25"}, id="k1"),
            sm.call("web_search", {"q": "x"}, id="u1"),
            content="Let me compute.",
        ),
        sm.text("425"),
    )
    result, _ = await scripted_agent.run({"prompt": "17 * 25?", "tools": ["calculator"]})

    assert result.answer == "425"
    assert [(s.call_id, s.status, s.observation) for s in result.steps] == [
        ("k1", "ok", "425"),
        ("u1", "error", "Error: unknown tool 'web_search'. Available tools: calculator."),
    ]
    assert all(not c.dropped_calls for c in result.model_calls)


async def test_observe_keeps_the_old_behaviour(scripted_agent: ScriptedHarness) -> None:
    scripted_agent.model.enqueue(
        sm.tool_calls(sm.call("web_search", {"q": "x"}, id="u1"), content="It is 425."),
        sm.text("It is 425, computed."),
    )
    result, handle = await scripted_agent.run(
        {"prompt": "17 * 25?", "tools": ["calculator"], "unknown_tools": "observe"}
    )

    assert result.answer == "It is 425, computed."
    [step] = result.steps
    assert step.observation.startswith("Error: unknown tool 'web_search'")
    assert await activity_types(handle) == ["call_model", "call_model"]
