"""Fields a provider puts on an assistant message or a tool call that this project does not read,
kept verbatim so they go back on the next call (seed 000: providers want their "thinking" back
unchanged).

Examples: Gemini's OpenAI-compatible endpoint puts a thought signature on each tool call
(`"extra_content": {"google": {"thought_signature": "..."}}`) and refuses the next request
without it; gateways serving Anthropic models with extended thinking put `thinking_blocks`
(LiteLLM) or `reasoning_details` (OpenRouter), with their signatures, on the message. Whatever
the `openai` client does not declare is kept, except the reasoning text this project carries
itself (`reasoning_content` / `reasoning`, see `contracts.messages.ChatMessage`).

Pure: the client's parsed objects in, plain JSON data out.

A plain reply's fields are kept exactly as sent. A streamed reply sends them in pieces, one
delta at a time, and `merge_piece` puts them together the way the text is put together: strings
are concatenated (a string equal to what is there already is a repeat, as servers repeat `type`
or `format` in every chunk, and is not appended again); objects are merged key by key; a list's
objects are merged into the item with the same `index` (or, without one, into the last item
when it has the same `type`: a thinking block's text arriving in pieces, then its signature),
other items appended; anything else replaces what was there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from durable_agents.contracts.messages import ReasoningKey

CARRIED_ELSEWHERE: frozenset[str] = frozenset(get_args(ReasoningKey))
"""Extra fields this project reads itself when they hold text: the reasoning."""


def provider_fields(parsed: Any) -> dict[str, Any]:
    """The fields of a message, delta or tool call (as the `openai` client parsed it) that the
    client does not declare: unset (None) ones and the reasoning text left out."""
    extra = getattr(parsed, "model_extra", None) or {}
    return {
        key: value
        for key, value in extra.items()
        if value is not None and not (key in CARRIED_ELSEWHERE and isinstance(value, str))
    }


def merge_piece(whole: dict[str, Any], piece: Mapping[str, Any]) -> dict[str, Any]:
    """`whole` with one streamed `piece` of provider fields folded in (see the module
    docstring); `whole` is updated in place and returned."""
    for key, value in piece.items():
        if value is None:
            continue
        whole[key] = _merged(whole.get(key), value)
    return whole


def _merged(have: Any, value: Any) -> Any:
    if isinstance(have, str) and isinstance(value, str):
        return have if value == have else have + value
    if isinstance(have, dict) and isinstance(value, Mapping):
        return merge_piece(have, value)
    if isinstance(have, list) and isinstance(value, list):
        for item in value:
            _merge_item(have, item)
        return have
    return _copy(value)


def _merge_item(items: list[Any], item: Any) -> None:
    """Fold one streamed list item into `items`."""
    if isinstance(item, Mapping) and items:
        if "index" in item:
            same = [i for i in items if isinstance(i, dict) and i.get("index") == item["index"]]
        else:
            last = items[-1]
            matches = isinstance(last, dict) and "index" not in last
            same = [last] if matches and last.get("type") == item.get("type") else []
        if same:
            merge_piece(same[0], item)
            return
    items.append(_copy(item))


def _copy(value: Any) -> Any:
    """A copy of JSON data, so later pieces never change what an earlier chunk held."""
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value
