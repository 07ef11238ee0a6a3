"""What a run carries across continue-as-new: its scratchpad, without what can never be sent
to the model again, and with old step observations shortened so the payload stays small."""

from __future__ import annotations

from collections.abc import Sequence

from contracts.agent_result import ToolStep
from contracts.scratchpad import Scratchpad
from loop.context_window import fit_context

STEP_OBSERVATIONS_BUDGET_CHARS = 600_000
SHORTENED_OBSERVATION_CHARS = 300
SHORTENED_MARKER = " […shortened; the full text is in the tool activity's result in history]"


def compact_steps(
    steps: Sequence[ToolStep], budget_chars: int = STEP_OBSERVATIONS_BUDGET_CHARS
) -> list[ToolStep]:
    """Shorten the observations of the oldest steps until all of them fit `budget_chars`.

    A run of hundreds of iterations would otherwise carry (and return) megabytes of tool
    output; the full text stays in the history of the run that produced it.
    """
    result = list(steps)
    total = sum(len(s.observation) for s in result)
    for index, step in enumerate(result):
        if total <= budget_chars:
            break
        if len(step.observation) > SHORTENED_OBSERVATION_CHARS:
            short = step.observation[:SHORTENED_OBSERVATION_CHARS] + SHORTENED_MARKER
            total -= len(step.observation) - len(short)
            result[index] = step.model_copy(update={"observation": short})
    return result


def compact_for_carry(pad: Scratchpad, max_context_tokens: int, summarize: bool) -> Scratchpad:
    """The scratchpad to carry: messages the context will never send again are removed.

    With `drop`, that is everything `fit_context` leaves out now (the kept window only moves
    forward); with `summarize`, everything the summary already covers.
    """
    messages = pad.messages
    if summarize:
        cut = pad.summarized_upto
    else:
        cut = fit_context(messages, max_context_tokens, prompt_index=pad.prompt_index).kept_from
    if cut <= 1:
        return pad.model_copy(update={"steps": compact_steps(pad.steps)})
    if cut > pad.prompt_index:
        kept = [messages[0], messages[pad.prompt_index], *messages[cut:]]
        removed, prompt_index = cut - 2, 1
    else:
        kept = [messages[0], *messages[cut:]]
        removed, prompt_index = cut - 1, pad.prompt_index - (cut - 1)
    return pad.model_copy(
        update={
            "messages": kept,
            "prompt_index": prompt_index,
            "summarized_upto": 1,
            "compacted": pad.compacted + removed,
            "steps": compact_steps(pad.steps),
        }
    )
