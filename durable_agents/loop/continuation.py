"""What a run carries across continue-as-new, and what it returns: its scratchpad without
what can never be sent to the model again, with old step observations shortened and old steps
left out, so neither payload comes near Temporal's 2 MB limit however long the run."""

from __future__ import annotations

from collections.abc import Sequence

from durable_agents.contracts.agent_result import ToolStep
from durable_agents.contracts.scratchpad import RepetitionState, Scratchpad
from durable_agents.loop.context_window import fit_context
from durable_agents.loop.summaries import shorten

STEP_OBSERVATIONS_BUDGET_CHARS = 200_000
SHORTENED_OBSERVATION_CHARS = 300
SHORTENED_MARKER = " […shortened; the full text is in the tool activity's result in history]"
MAX_KEPT_STEPS = 1_000
"""Steps kept in the scratchpad and the result; older ones are counted in `steps_omitted`."""
CARRY_LIMIT_BYTES = 1_500_000
"""The most a continue-as-new input may weigh (Temporal refuses payloads over 2 MB)."""


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
            short = shorten(
                step.observation,
                SHORTENED_OBSERVATION_CHARS + len(SHORTENED_MARKER),
                one_line=False,
                marker=SHORTENED_MARKER,
            )
            total -= len(step.observation) - len(short)
            result[index] = step.model_copy(update={"observation": short})
    return result


def keep_recent_steps(pad: Scratchpad, limit: int = MAX_KEPT_STEPS) -> Scratchpad:
    """At most `limit` steps, the most recent; the others are counted in `steps_omitted`."""
    if len(pad.steps) <= limit:
        return pad
    dropped = len(pad.steps) - limit
    return pad.model_copy(
        update={"steps": pad.steps[dropped:], "steps_omitted": pad.steps_omitted + dropped}
    )


def compact_for_carry(pad: Scratchpad, max_context_tokens: int, summarize: bool) -> Scratchpad:
    """The scratchpad to carry: messages the context will never send again are removed, steps
    are shortened and capped, and the whole stays under `CARRY_LIMIT_BYTES`.

    With `drop`, the messages removed are everything `fit_context` leaves out now (the kept
    window only moves forward); with `summarize`, everything the summary already covers.
    """
    messages = pad.messages
    if summarize:
        cut = pad.summarized_upto
    else:
        cut = fit_context(messages, max_context_tokens, prompt_index=pad.prompt_index).kept_from
    if cut > 1:
        if cut > pad.prompt_index:
            kept = [messages[0], messages[pad.prompt_index], *messages[cut:]]
            removed, prompt_index = cut - 2, 1
        else:
            kept = [messages[0], *messages[cut:]]
            removed, prompt_index = cut - 1, pad.prompt_index - (cut - 1)
        pad = pad.model_copy(
            update={
                "messages": kept,
                "prompt_index": prompt_index,
                "summarized_upto": 1,
                "compacted": pad.compacted + removed,
            }
        )
    pad = keep_recent_steps(pad)
    pad = pad.model_copy(update={"steps": compact_steps(pad.steps)})
    if carried_bytes(pad) > CARRY_LIMIT_BYTES:  # last resort: keep what the loop needs
        pad = pad.model_copy(
            update={
                "steps": compact_steps(pad.steps, budget_chars=0),
                "repetition": RepetitionState(
                    calls=pad.repetition.calls,
                    errors=pad.repetition.errors,
                    succeeded=pad.repetition.succeeded,
                ),
            }
        )
    while carried_bytes(pad) > CARRY_LIMIT_BYTES and pad.steps:
        pad = keep_recent_steps(pad, len(pad.steps) // 2)
    return pad


def carried_bytes(pad: Scratchpad) -> int:
    return len(pad.model_dump_json().encode("utf-8"))
