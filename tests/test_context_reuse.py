"""Building a session turn's conversation from the previous turn's in the worker's context cache
(`loop.context_reuse`), and the cache's side (`activities.context_cache`): what it applies, what
it takes as a retry, and when it misses (so the workflow sends everything)."""

from __future__ import annotations

from activities.context_cache import ContextCache
from contracts.messages import ChatMessage, ToolCall
from contracts.model_io import ContextDelta, ToolSchema
from loop.context_reuse import NEW, Reuse, apply_pieces, message_digest, pieces_length, reuse_pieces

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
    assert pieces_length(pieces) == len(NEXT)
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


def delta(**fields: object) -> ContextDelta:
    return ContextDelta(key="k", **fields)


def cache_holding(messages: list[ChatMessage], sequence: int) -> ContextCache:
    cache = ContextCache()
    assert cache.resolve(delta(base_length=0, new_messages=messages, sequence=sequence - 1))
    return cache


def sent(cache: ContextCache, step: ContextDelta) -> list[ChatMessage] | None:
    resolved = cache.resolve(step)
    return None if resolved is None else resolved.messages


def test_the_cache_builds_a_turn_from_pieces_and_counts_the_delta() -> None:
    cache = cache_holding(PREVIOUS, sequence=5)
    pieces, new = split(PREVIOUS, NEXT)
    step = delta(base_length=len(PREVIOUS), new_messages=new, reuse=pieces, sequence=5)
    assert sent(cache, step) == NEXT
    # The next call of the turn appends to what the pieces made.
    more = delta(base_length=len(NEXT), new_messages=[calls("c3")], sequence=6)
    assert sent(cache, more) == [*NEXT, calls("c3")]


def test_a_retried_call_gets_what_its_delta_made() -> None:
    cache = cache_holding(PREVIOUS, sequence=5)
    pieces, new = split(PREVIOUS, NEXT)
    step = delta(base_length=len(PREVIOUS), new_messages=new, reuse=pieces, sequence=5)
    assert sent(cache, step) == NEXT
    assert sent(cache, step) == NEXT  # the model failed; the activity is retried
    assert cache.misses == 0


def test_a_worker_that_missed_a_call_misses_even_when_the_lengths_match() -> None:
    """Another worker answered sequence 5; this one still holds what sequence 4 made, and its
    list happens to have the length the delta builds on."""
    stale = [SYSTEM, user("a"), assistant("b"), user("c"), assistant("d"), user("e")]
    cache = cache_holding(stale, sequence=5)
    pieces, new = split(PREVIOUS, NEXT)
    step = delta(base_length=len(PREVIOUS), new_messages=new, reuse=pieces, sequence=6)
    assert len(stale) == len(PREVIOUS)
    assert sent(cache, step) is None
    assert cache.misses == 1


def test_a_delta_without_a_sequence_is_taken_as_before() -> None:
    cache = ContextCache()
    assert cache.resolve(delta(base_length=0, new_messages=[SYSTEM, user("q")]))
    step = delta(base_length=2, new_messages=[assistant("a")])
    assert sent(cache, step) == [SYSTEM, user("q"), assistant("a")]
    assert sent(cache, step) == [SYSTEM, user("q"), assistant("a")]  # a retry
    assert sent(cache, delta(base_length=7, new_messages=[user("x")])) is None


def test_tools_are_sent_once_then_named() -> None:
    calculator = ToolSchema(name="calculator", description="Evaluates.", parameters={})
    cache = ContextCache()
    first = cache.resolve(delta(base_length=0, new_messages=[SYSTEM], sequence=0), [calculator])
    assert first is not None and first.tools == [calculator]
    named = delta(base_length=1, new_messages=[user("q")], sequence=1, tools_cached=True)
    again = cache.resolve(named, [])
    assert again is not None and again.tools == [calculator]
    assert "tools_cached" not in delta(base_length=0, new_messages=[]).model_dump()
    elsewhere = ContextCache()  # another worker: it holds neither the messages nor the tools
    assert elsewhere.resolve(named, []) is None
