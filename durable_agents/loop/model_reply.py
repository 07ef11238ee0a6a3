"""Read a model reply: give every tool call a usable id, drop calls of tools the run does not
have when the text is the answer, and tell a final answer from a nudge."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from durable_agents.contracts.agent_input import UnknownTools
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelReply
from durable_agents.contracts.scratchpad import Scratchpad
from durable_agents.loop.output import OutputSpec, Reading, read_typed_reply
from durable_agents.loop.stop import Outcome

EMPTY_REPLY_NUDGE = (
    "Your last reply was empty. Answer the user's request now, or call one of the tools."
)
EMPTY_ANSWER_MESSAGE = "The model returned no answer (an empty reply, twice in a row)."
CUT_OFF_NOTE = "\n\n[The reply was cut off at the model's output token limit.]"
FILTERED_MESSAGE = "The model provider's content filter stopped the reply."


def normalize_reply(reply: ModelReply, iteration: int) -> ModelReply:
    """Return `reply` with every tool call carrying a unique, non-empty id.

    Some OpenAI-compatible servers omit ids or repeat them; tool messages are matched to calls by
    id, so a missing or repeated id becomes `call_<iteration>_<index>`.
    """
    taken = {call.id for call in reply.tool_calls}
    seen: set[str] = set()
    calls: list[ToolCall] = []
    for index, call in enumerate(reply.tool_calls):
        call_id = call.id.strip()
        if not call_id or call_id in seen:
            call_id = f"call_{iteration}_{index}"
            suffix = 0
            while call_id in taken or call_id in seen:  # never collide with a provider's id
                suffix += 1
                call_id = f"call_{iteration}_{index}_{suffix}"
        seen.add(call_id)
        calls.append(call if call_id == call.id else call.model_copy(update={"id": call_id}))
    return reply.model_copy(update={"tool_calls": calls})


@dataclass(frozen=True)
class UnknownCallsDropped:
    """Every tool call of a reply named a tool the run does not have, and the reply has text:
    `reply` is the reply without its calls (its text is the answer), `calls` what was dropped."""

    reply: ModelReply
    calls: list[ToolCall]


def drop_unknown_calls(
    reply: ModelReply, offered: Collection[str], rule: UnknownTools
) -> UnknownCallsDropped | None:
    """Seed 000's filter of hallucinated calls: when every call names a tool outside `offered`
    (the tools the model was told about) and the reply has visible text, the text is the answer
    and the calls are dropped. None otherwise: no calls, a call of an offered tool (then each
    unknown one gets the `unknown tool` observation, `loop.tool_requests.plan_tool_calls`), no
    text, or `rule` is `observe` (every unknown call is observed, the model asked again).

    Dropping them also keeps the conversation valid: an assistant message with tool calls must
    be followed by one tool message per call."""
    if rule != "answer_with_text" or not reply.tool_calls or not (reply.content or "").strip():
        return None
    if any(call.name in offered for call in reply.tool_calls):
        return None
    return UnknownCallsDropped(reply.model_copy(update={"tool_calls": []}), list(reply.tool_calls))


def with_dropped_calls(pad: Scratchpad, calls: list[ToolCall]) -> Scratchpad:
    """The scratchpad whose latest model call record names the calls dropped from its reply
    (`drop_unknown_calls`), so the run's result shows them."""
    if not pad.model_calls or not calls:
        return pad
    *earlier, latest = pad.model_calls
    recorded = latest.model_copy(update={"dropped_calls": list(calls)})
    return pad.model_copy(update={"model_calls": [*earlier, recorded]})


@dataclass(frozen=True)
class FinalAnswer:
    """The model answered without tool calls: the run is complete."""

    text: str


@dataclass(frozen=True)
class AskAgain:
    """The reply was empty: ask once more with this message appended."""

    nudge: ChatMessage


@dataclass(frozen=True)
class GiveUp:
    """The reply was empty again: stop with `EMPTY_ANSWER_MESSAGE`."""

    text: str


def read_final_answer(reply: ModelReply, already_nudged: bool) -> FinalAnswer | AskAgain | GiveUp:
    """Decide what a reply without tool calls means.

    Text is the answer. Empty text (with or without reasoning) is never returned as an answer:
    the model is asked once more, then the run stops.
    """
    text = (reply.content or "").strip()
    if text:
        return FinalAnswer(text=reply.content or "")
    if already_nudged:
        return GiveUp(text=EMPTY_ANSWER_MESSAGE)
    return AskAgain(nudge=ChatMessage.user(EMPTY_REPLY_NUDGE))


def read_reply(pad: Scratchpad, reply: ModelReply, spec: OutputSpec | None = None) -> Reading:
    """What a reply means for the loop.

    - Cut off at the token limit (`length`) or stopped by the content filter: the run stops;
      cut-off text is never returned as if it were complete.
    - With an output schema: a `final_result` call or a text answer is validated (see
      `loop.output`); an invalid one goes back to the model with the errors.
    - Tool calls: a round of tools comes next.
    - Text: the final answer. Empty: the scratchpad gains a nudge (asked once), or the run
      gives up.
    """
    text = reply.content or ""
    if not reply.tool_calls and reply.finish_reason == "length":
        return Reading(pad, Outcome(cut_off=text.rstrip() + CUT_OFF_NOTE))
    if reply.finish_reason == "content_filter":
        return Reading(pad, Outcome(filtered=text.strip() or FILTERED_MESSAGE))
    if spec is not None and (typed := read_typed_reply(pad, reply, spec)) is not None:
        return typed
    if reply.tool_calls:
        return Reading(pad, Outcome())
    reading = read_final_answer(reply, already_nudged=pad.nudged_empty)
    if isinstance(reading, AskAgain):
        nudged = pad.model_copy(
            update={"messages": [*pad.messages, reading.nudge], "nudged_empty": True}
        )
        return Reading(nudged, Outcome())
    if isinstance(reading, GiveUp):
        return Reading(pad, Outcome(gave_up=reading.text))
    return Reading(pad, Outcome(answer=reading.text))
