"""Which part of the conversation the next model call sends, and when old context is due to be
summarised first (the `summarize` strategy). Two separate decisions, so the loop can make
summarising an explicit step before the model call instead of a side effect of fitting."""

from __future__ import annotations

from dataclasses import dataclass

from durable_agents.contracts.messages import ChatMessage
from durable_agents.contracts.scratchpad import Scratchpad
from durable_agents.loop.context_window import (
    ContextFit,
    clip_to_tokens,
    fit_context,
    summary_request,
)
from durable_agents.loop.tokens import TokenTally


def token_tally(pad: Scratchpad) -> TokenTally:
    """The run's running token estimates, kept with its scratchpad (made on first use)."""
    if not isinstance(pad._token_tally, TokenTally):
        pad._token_tally = TokenTally()
    return pad._token_tally


def summary_reserve(max_context_tokens: int) -> int:
    """Tokens kept free for the running summary (a fifth of the window)."""
    return max_context_tokens // 5


@dataclass(frozen=True)
class SummaryDue:
    """Messages about to leave the window, to be folded into the running summary, and the
    messages of the request that asks the model to do it."""

    upto: int
    """After summarising, the summary covers every message before this index."""
    request: list[ChatMessage]
    max_tokens: int


def summary_due(pad: Scratchpad, max_context_tokens: int) -> SummaryDue | None:
    """With the `summarize` strategy: what to summarise before the next call, or None."""
    reserve = summary_reserve(max_context_tokens)
    fit = fit_context(
        pad.messages,
        max_context_tokens,
        prompt_index=pad.prompt_index,
        reserve_tokens=reserve,
        tally=token_tally(pad),
    )
    if fit.kept_from <= pad.summarized_upto:
        return None
    start = pad.summarized_upto  # (only the messages leaving now: not the whole run again)
    dropped = [
        message
        for index, message in enumerate(pad.messages[start : fit.kept_from], start)
        if index != pad.prompt_index
    ]
    return SummaryDue(
        upto=fit.kept_from,
        request=summary_request(pad.summary, dropped, max_chars=reserve * 3),
        max_tokens=reserve,
    )


def with_summary(pad: Scratchpad, due: SummaryDue, text: str | None) -> Scratchpad:
    """The scratchpad once the model summarised `due` as `text` (an empty reply keeps the
    previous summary)."""
    summary = clip_to_tokens((text or "").strip(), due.max_tokens) or pad.summary
    return pad.model_copy(update={"summary": summary, "summarized_upto": due.upto})


def plan_context(pad: Scratchpad, max_context_tokens: int, summarize: bool) -> ContextFit:
    """What the next model call sends: all messages if they fit, else the system message, the
    prompt, a summary or note, and the most recent messages. `dropped` also counts messages
    compacted away when the run continued as new."""
    fit = fit_context(
        pad.messages,
        max_context_tokens,
        prompt_index=pad.prompt_index,
        reserve_tokens=summary_reserve(max_context_tokens) if summarize else 0,
        tally=token_tally(pad),
    )
    kept_from = max(fit.kept_from, pad.summarized_upto) if summarize else fit.kept_from
    return ContextFit(
        kept_from=kept_from,
        estimated_tokens=fit.estimated_tokens,
        dropped=fit.dropped + pad.compacted,
    )
