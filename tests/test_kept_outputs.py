"""A tool's output recorded once: the workflow's side (`loop.kept_outputs.refer_to_kept`: which
tool results a delta names instead of carrying) and the worker's (`activities.kept_outputs`,
through `ContextCache.resolve`: it puts them back, or misses so the whole conversation comes).
The run through a real worker is pinned in `tests/test_history_budget.py`; a worker that lost
an output is `tests/test_kept_outputs_run.py`."""

from __future__ import annotations

from durable_agents.activities.context_cache import ContextCache
from durable_agents.activities.kept_outputs import KEEP_MIN_CHARS, KeptOutputs
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ContextDelta
from durable_agents.loop.kept_outputs import KeptOutput, refer_to_kept
from tests.test_context_reuse import SYSTEM, appended, cache_holding, sent, user

QUEUE = "agent@host-1-abc"
LONG = "x" * KEEP_MIN_CHARS
OTHER_LONG = "y" * KEEP_MIN_CHARS


def calls(*ids: str) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        tool_calls=[ToolCall(id=i, name="fixed_output", arguments="{}") for i in ids],
    )


def result(call_id: str, text: str) -> ChatMessage:
    return ChatMessage.tool_result(call_id, text)


def kept(call_id: str, text: str, queue: str = QUEUE) -> KeptOutput:
    return KeptOutput(ref=f"run/1/{call_id}", kept_by=queue, content=text)


# -- the workflow's side ---------------------------------------------------------------------


def test_a_result_the_receiving_worker_keeps_goes_without_its_content() -> None:
    new = [calls("c1", "c2"), result("c1", LONG), result("c2", "4")]
    sent_messages, refs = refer_to_kept(new, {"c1": kept("c1", LONG)}, QUEUE)
    assert refs == {1: "run/1/c1"}
    assert sent_messages[1] == ChatMessage(role="tool", tool_call_id="c1")
    assert "content" not in sent_messages[1].model_dump(exclude_unset=False, mode="json")
    assert sent_messages[0] == new[0] and sent_messages[2] == new[2]  # the rest as they are


def test_a_result_goes_whole_unless_it_is_the_output_the_worker_it_goes_to_keeps() -> None:
    new = [calls("c1"), result("c1", LONG)]
    elsewhere = {"c1": kept("c1", LONG, queue="agent@host-2-def")}
    assert refer_to_kept(new, elsewhere, QUEUE) == (new, {})  # another worker ran the call
    assert refer_to_kept(new, {"c1": kept("c1", LONG)}, None) == (new, {})  # no affinity
    warned = [calls("c1"), result("c1", f"{LONG}\n(you called this twice)")]
    assert refer_to_kept(warned, {"c1": kept("c1", LONG)}, QUEUE) == (warned, {})  # changed
    assert refer_to_kept(new, {}, QUEUE) == (new, {})
    user_named_like_a_call = [ChatMessage(role="user", content=LONG, tool_call_id="c1")]
    assert refer_to_kept(user_named_like_a_call, {"c1": kept("c1", LONG)}, QUEUE)[1] == {}


# -- the worker's side -----------------------------------------------------------------------


def test_the_worker_keeps_long_outputs_only_and_forgets_the_oldest_first() -> None:
    outputs = KeptOutputs(max_outputs=2, max_chars=3 * KEEP_MIN_CHARS)
    assert not outputs.keep("short", "x" * (KEEP_MIN_CHARS - 1))
    assert outputs.keep("a", LONG) and outputs.keep("b", LONG) and outputs.keep("c", LONG)
    assert len(outputs) == 2  # "a" went: too many
    assert outputs.fill([result("c1", "")], {0: "a"}) is None
    assert outputs.keep("d", "z" * (2 * KEEP_MIN_CHARS))  # "b" goes: too many characters
    assert outputs.fill([result("c1", "")], {0: "b"}) is None
    assert not outputs.keep("huge", "w" * (4 * KEEP_MIN_CHARS))  # over the whole bound


def test_an_output_put_back_is_forgotten_and_a_partial_fill_forgets_nothing() -> None:
    outputs = KeptOutputs()
    outputs.keep("a", LONG)
    outputs.keep("b", OTHER_LONG)
    two = [result("c1", ""), result("c2", "")]
    assert outputs.fill(two, {0: "a", 1: "missing"}) is None
    assert len(outputs) == 2
    assert outputs.fill(two, {0: "a", 1: "b"}) == [result("c1", LONG), result("c2", OTHER_LONG)]
    assert len(outputs) == 0  # the context cache holds them now, in the conversation
    assert outputs.keep("c", LONG)  # the characters were given back too


def kept_delta(held: list[ChatMessage], new: list[ChatMessage]) -> ContextDelta:
    """What the gateway sends: the delta's digest is of the whole messages, the results the
    worker keeps go without their content."""
    delta = appended(held, new)
    by_call = {m.tool_call_id: kept(m.tool_call_id, m.content or "") for m in new if m.tool_call_id}
    named, refs = refer_to_kept(new, by_call, QUEUE)
    return delta.model_copy(update={"new_messages": named, "kept": refs})


def test_the_cache_puts_kept_outputs_back_before_it_checks_the_digest() -> None:
    start = [SYSTEM, user("go")]
    cache = cache_holding(start)
    cache.outputs.keep("run/1/c1", LONG)
    new = [calls("c1"), result("c1", LONG)]
    step = kept_delta(start, new)
    assert step.kept == {1: "run/1/c1"} and step.new_messages[1].content is None
    assert sent(cache, step) == [*start, *new]
    assert len(cache.outputs) == 0  # put back and forgotten
    assert sent(cache, step) == [*start, *new]  # a retry of the same call: the cache has it
    assert cache.misses == 0


def test_an_output_the_worker_lost_or_holds_otherwise_is_a_miss() -> None:
    start = [SYSTEM, user("go")]
    new = [calls("c1"), result("c1", LONG)]
    restarted = cache_holding(start)  # the conversation is held, the output is not
    assert sent(restarted, kept_delta(start, new)) is None
    other = cache_holding(start)
    other.outputs.keep("run/1/c1", OTHER_LONG)  # the same ref, another text: the digest says so
    assert sent(other, kept_delta(start, new)) is None
    assert restarted.misses == 1 and other.misses == 1
    assert ContextCache().resolve(kept_delta(start, new)) is None  # holds nothing at all


def test_a_delta_names_kept_outputs_in_few_bytes() -> None:
    new = [calls("c1"), result("c1", LONG)]
    step = kept_delta([SYSTEM], new)
    whole_json = appended([SYSTEM], new).model_dump_json()
    assert len(step.model_dump_json()) < len(whole_json) - KEEP_MIN_CHARS + 64
