"""Building a session turn's conversation from the previous turn's in the worker's context cache
(`loop.context_reuse`), and the cache's side (`activities.context_cache`): what it applies, what
it takes as a retry, and when it misses (so the workflow sends everything)."""

from __future__ import annotations

from durable_agents.activities.context_cache import ContextCache
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import LEGACY_MISS, ContextDelta, ToolSchema
from durable_agents.loop.context_reuse import (
    NEW,
    Reuse,
    apply_pieces,
    conversation_digest,
    message_digest,
    reuse_pieces,
    tools_digest,
)

SYSTEM = ChatMessage.system("You are helpful.")


def user(text: str) -> ChatMessage:
    return ChatMessage.user(text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


def calls(call_id: str) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        tool_calls=[ToolCall(id=call_id, name="calculator", arguments='{"expression": "1"}')],
    )


# The previous turn as the worker holds it: memory of one turn, the message, a tool round.
PREVIOUS = [
    SYSTEM,
    user("one"),
    assistant("answer one"),
    user("two"),
    calls("c1"),
    ChatMessage.tool_result("c1", "1"),
]
# The next turn: memory of two turns (the answer to "two" never reached the cache), a message.
NEXT = [
    SYSTEM,
    user("one"),
    assistant("answer one"),
    user("two"),
    assistant("answer two"),
    user("3"),
]


def split(
    cached: list[ChatMessage], current: list[ChatMessage]
) -> tuple[list[tuple[int, int]], list[ChatMessage]]:
    """The pieces and new messages of `current` against a cache holding `cached`."""
    reuse: Reuse = reuse_pieces([message_digest(m) for m in cached], current)
    assert reuse.digests == [message_digest(m) for m in current]
    return reuse.pieces, reuse.new


def test_a_next_turn_reuses_the_remembered_messages_and_sends_the_rest() -> None:
    pieces, new = split(PREVIOUS, NEXT)
    assert pieces == [(0, 4), (NEW, 2)]
    assert new == [assistant("answer two"), user("3")]
    assert apply_pieces(PREVIOUS, pieces, new) == NEXT


def test_a_window_that_dropped_the_oldest_turn_reuses_from_the_middle() -> None:
    shifted = [SYSTEM, user("two"), assistant("answer two"), user("3")]
    pieces, new = split(PREVIOUS, shifted)
    assert pieces == [(0, 1), (3, 4), (NEW, 2)]
    assert apply_pieces(PREVIOUS, pieces, new) == shifted


def test_messages_differing_in_any_field_are_not_taken_for_each_other() -> None:
    reasoning = ChatMessage(role="assistant", content="answer one", reasoning_content="hm")
    other_call = calls("c2")
    pieces, new = split(PREVIOUS, [SYSTEM, reasoning, other_call])
    assert pieces == [(0, 1), (NEW, 2)]
    assert new == [reasoning, other_call]


def test_nothing_in_common_sends_everything() -> None:
    pieces, new = split([], NEXT)
    assert (pieces, new) == ([(NEW, len(NEXT))], NEXT)


def test_pieces_that_do_not_fit_are_refused() -> None:
    assert apply_pieces(PREVIOUS, [(0, 99)], []) is None  # past the cached messages
    assert apply_pieces(PREVIOUS, [(NEW, 2)], [user("x")]) is None  # more new than sent
    assert apply_pieces(PREVIOUS, [(0, 1)], [user("x")]) is None  # a new message left over
    assert apply_pieces(PREVIOUS, [(3, 2)], []) is None  # an empty or reversed span


def digest(messages: list[ChatMessage]) -> str:
    return conversation_digest([message_digest(m) for m in messages])


def whole(messages: list[ChatMessage]) -> ContextDelta:
    """A delta that carries the whole conversation."""
    return ContextDelta(
        key="k", base_length=0, held=0, new_messages=messages, result_digest=digest(messages)
    )


def appended(held: list[ChatMessage], new: list[ChatMessage]) -> ContextDelta:
    return ContextDelta(
        key="k",
        base_length=LEGACY_MISS,
        held=len(held),
        new_messages=new,
        result_digest=digest([*held, *new]),
    )


def reused(cached: list[ChatMessage], current: list[ChatMessage]) -> ContextDelta:
    pieces, new = split(cached, current)
    return ContextDelta(
        key="k",
        base_length=LEGACY_MISS,
        held=len(cached),
        new_messages=new,
        reuse=pieces,
        result_digest=digest(current),
    )


def sent(cache: ContextCache, step: ContextDelta) -> list[ChatMessage] | None:
    resolved = cache.resolve(step)
    return None if resolved is None else resolved.messages


def cache_holding(messages: list[ChatMessage]) -> ContextCache:
    cache = ContextCache()
    assert sent(cache, whole(messages)) == messages
    return cache


def test_the_cache_builds_a_turn_from_pieces_then_appends() -> None:
    cache = cache_holding(PREVIOUS)
    assert sent(cache, reused(PREVIOUS, NEXT)) == NEXT
    assert sent(cache, appended(NEXT, [calls("c3")])) == [*NEXT, calls("c3")]
    assert cache.misses == 0


def test_a_retried_call_gets_what_its_delta_made() -> None:
    cache = cache_holding(PREVIOUS)
    step = reused(PREVIOUS, NEXT)
    assert sent(cache, step) == NEXT
    assert sent(cache, step) == NEXT  # the model failed; the activity is retried
    assert cache.misses == 0


def test_a_stale_entry_of_the_same_length_misses_instead_of_building_a_wrong_conversation() -> None:
    """Worker A applied a call that then failed; the workflow sent the next conversation whole
    to worker B, and B's next delta comes back to A. Same key, same length: A misses."""
    a, b = ContextCache(), ContextCache()
    failed = [SYSTEM, user("old memory"), assistant("old answer"), user("turn N")]
    assert sent(a, whole(failed)) == failed
    current = [SYSTEM, user("turn N"), assistant("[note: did not complete]"), user("turn N+1")]
    assert sent(b, whole(current)) == current
    step = appended(current, [calls("c1"), ChatMessage.tool_result("c1", "1")])
    assert len(failed) == len(current)
    assert sent(a, step) is None
    assert sent(b, step) == [*current, calls("c1"), ChatMessage.tool_result("c1", "1")]
    assert sent(a, reused(current, [*current, user("more")])) is None  # pieces of B's list
    assert sent(a, reused(current, [SYSTEM, user("x")])) == [SYSTEM, user("x")]  # same content
    assert a.misses == 2


def test_workers_that_predate_held_miss_the_deltas_they_cannot_apply() -> None:
    """A worker before `held` reads `base_length` only: -1 never matches its cache, so it
    answers a miss and gets the whole conversation, during a rolling deploy."""
    cache = cache_holding(PREVIOUS)
    legacy_view = ContextDelta(key="k", base_length=LEGACY_MISS, new_messages=[user("x")])
    assert sent(cache, legacy_view) is None


def test_a_delta_from_a_run_that_predates_held_is_taken_as_before() -> None:
    cache = ContextCache()
    assert sent(cache, ContextDelta(key="k", base_length=0, new_messages=[SYSTEM, user("q")]))
    step = ContextDelta(key="k", base_length=2, new_messages=[assistant("a")])
    assert sent(cache, step) == [SYSTEM, user("q"), assistant("a")]
    assert sent(cache, step) == [SYSTEM, user("q"), assistant("a")]  # a retry
    assert sent(cache, ContextDelta(key="k", base_length=7, new_messages=[user("x")])) is None


def test_tools_are_sent_once_then_named() -> None:
    calculator = ToolSchema(name="calculator", description="Evaluates.", parameters={})
    cache = ContextCache()
    first = cache.resolve(whole([SYSTEM]), [calculator])
    assert first is not None and first.tools == [calculator]
    named = appended([SYSTEM], [user("q")]).model_copy(
        update={"tools_cached": True, "tools_digest": tools_digest([calculator])}
    )
    again = cache.resolve(named, [])
    assert again is not None and again.tools == [calculator]
    assert "tools_cached" not in whole([]).model_dump()
    other = named.model_copy(update={"tools_digest": tools_digest([])})
    assert cache.resolve(other, []) is None  # the cache holds other tools
    assert ContextCache().resolve(named, []) is None  # another worker holds nothing
