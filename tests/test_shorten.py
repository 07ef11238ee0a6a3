"""`loop.summaries.shorten`, the one text-shortening helper, with its options; and the one token
estimate (`loop.tokens`), which the demo model's usage figures use too."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from durable_agents.activities.demo_model import DemoChatModel
from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.model_io import ModelRequest, ToolSchema
from durable_agents.loop.summaries import first_line, shorten
from durable_agents.loop.tokens import (
    estimate_messages_tokens,
    estimate_text_tokens,
    estimate_tokens,
)


def test_shorten_can_keep_lines() -> None:
    assert shorten("a\n  b\nc", 100, one_line=False) == "a\n  b\nc"
    assert shorten("ab\ncdefgh", 5, one_line=False) == "ab\nc…"


def test_shorten_takes_any_marker() -> None:
    assert shorten("abcdefghij", 8, marker=" [cut]") == "ab [cut]"
    assert shorten("abcdefghij", 4, marker="") == "abcd"
    assert shorten("abcdefghij", 10, marker=" [cut]") == "abcdefghij"


def test_a_limit_below_the_marker_gives_the_marker_alone() -> None:
    assert shorten("abcdefghij", 0) == "…"
    assert shorten("abcdefghij", 3, marker="[cut]") == "[cut]"


def test_shorten_measures_in_tokens() -> None:
    text = "abcd" * 10  # 10 tokens
    assert shorten(text, 10, size=estimate_text_tokens) == text
    clipped = shorten(text, 5, size=estimate_text_tokens)
    assert clipped == "abcd" * 4 + "…"  # 4 tokens of text, 1 of marker
    assert shorten("漢字仮名", 3, marker="", size=estimate_text_tokens) == "漢字仮"


@given(
    st.text(max_size=300),
    st.integers(0, 200),
    st.sampled_from(["…", "", " [cut]"]),
    st.booleans(),
)
def test_shorten_fits_the_limit_and_keeps_a_prefix(
    text: str, limit: int, marker: str, one_line: bool
) -> None:
    result = shorten(text, limit, one_line=one_line, marker=marker)
    source = " ".join(text.split()) if one_line else text
    if len(source) <= limit:
        assert result == source
    else:
        assert result.endswith(marker)
        assert source.startswith(result[: len(result) - len(marker)])
        assert len(result) <= max(limit, len(marker))


@given(st.text(max_size=300), st.integers(0, 100))
def test_shorten_in_tokens_fits_the_limit(text: str, limit: int) -> None:
    result = shorten(text, limit, one_line=False, size=estimate_text_tokens)
    if estimate_text_tokens(text) <= limit:
        assert result == text
    else:
        body = result[:-1]
        assert text.startswith(body)
        assert estimate_text_tokens(body) + 1 <= max(limit, 1)
        assert estimate_text_tokens(text[: len(body) + 1]) + 1 > limit  # the longest that fits


def test_messages_estimate_is_the_sum_of_the_messages() -> None:
    messages = [ChatMessage.system("You are helpful."), ChatMessage.user("What is 17 * 25?")]
    assert estimate_messages_tokens(messages) == sum(estimate_tokens(m) for m in messages)


@pytest.mark.parametrize("prompt", ["Tell me a joke", "What is 17 * 25?"])
async def test_the_demo_models_usage_is_the_shared_estimate(prompt: str) -> None:
    messages = [ChatMessage.system("You are helpful."), ChatMessage.user(prompt)]
    tools = [ToolSchema(name="calculator", description="math", parameters={"type": "object"})]
    reply = await DemoChatModel().complete(ModelRequest(messages=messages, tools=tools))
    assert reply.usage.prompt_tokens == estimate_messages_tokens(messages)
    assert reply.usage.completion_tokens == estimate_tokens(reply.as_message())
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_first_line_is_a_runs_summary() -> None:
    assert first_line("\n  \nFix the login bug\nthen run the tests") == "Fix the login bug"
    assert first_line("word " * 50, 20) == "word word word word…"
    assert first_line("") == ""
