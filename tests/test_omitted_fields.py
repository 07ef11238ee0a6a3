"""What every model call and tool call records leaves its unset fields out
(`contracts.omitted`), and reading the JSON back gives the same model: the defaults fill in.
A field that starts being written at its default adds bytes to every call in every history."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from durable_agents.contracts.messages import ToolCall
from durable_agents.contracts.model_io import ContextDelta, ModelReply
from durable_agents.contracts.tool_io import ToolInvocation, ToolOutput
from durable_agents.contracts.usage import TokenUsage

CALL = ToolCall(id="c1", name="calculator", arguments="{}")


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (
            ModelReply(model="m", tool_calls=[CALL], finish_reason="tool_calls"),
            {"model", "tool_calls", "finish_reason", "usage"},
        ),
        (ModelReply(model="m", content="hi", usage=TokenUsage()), {"model", "content", "usage"}),
        (ModelReply(model="m", context_cache_miss=True), {"model", "usage", "context_cache_miss"}),
        (
            ContextDelta(key="k", base_length=-1, new_messages=[], held=3),
            {"key", "base_length", "new_messages", "held"},
        ),
        (
            ContextDelta(key="k", base_length=0, new_messages=[], kept_from=4, dropped=2),
            {"key", "base_length", "new_messages", "kept_from", "dropped"},
        ),
        (
            ToolInvocation(call_id="c1", tool="t", args={}, idempotency_key="w/1/c1"),
            {"call_id", "tool", "args", "idempotency_key"},
        ),
        (
            ToolInvocation(
                call_id="c1", tool="t", args={}, idempotency_key="k", max_output_chars=5, scope="u"
            ),
            {"call_id", "tool", "args", "idempotency_key", "max_output_chars", "scope"},
        ),
        (
            ToolInvocation(call_id="c1", tool="t", args={}, idempotency_key="k", keep_output=False),
            {"call_id", "tool", "args", "idempotency_key", "keep_output"},
        ),
        (ToolOutput(content="4"), {"content", "truncated", "original_chars", "stop_run"}),
        (
            ToolOutput(content="x", kept_by="q@h-1-a"),
            {"content", "truncated", "original_chars", "stop_run", "kept_by"},
        ),
    ],
)
def test_unset_fields_are_left_out_and_read_back_as_their_defaults(
    value: BaseModel, written: set[str]
) -> None:
    text = value.model_dump_json()
    assert set(json.loads(text)) == written
    assert type(value).model_validate_json(text) == value
