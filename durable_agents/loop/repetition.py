"""Repeated-action detection: a model that repeats the same call, or keeps hitting the same
error, is warned once and then stopped.

The Nth identical call (same tool, same canonical arguments) does not run: its observation is a
warning that quotes the earlier result. If the model makes it again, the run stops with
`repeated_calls`. The same error text from the same tool N times gets the same treatment.

A side effect needs less: a call identical to one that already ran and succeeded
(`remember_successes`) is a repeat from the second time (`screen_repeat`). When it waits for
approval, the request says so (`PendingRequest.repeat_of`), so the person asked knows that
approving does the same thing again; a policy rule with `repeat: refuse` never runs it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from durable_agents.contracts.agent_result import ToolStep
from durable_agents.contracts.approvals import RepeatOf
from durable_agents.contracts.policy import RepeatSetting
from durable_agents.contracts.scratchpad import RepetitionState
from durable_agents.loop.approvals import args_digest
from durable_agents.loop.summaries import shorten
from durable_agents.loop.tool_requests import PlannedCall, RefusedCall, ToolRequest

T = TypeVar("T")


REMEMBERED_KEYS = 2_000
"""Distinct calls and errors the state remembers (the most recent ones); older are forgotten."""
REMEMBERED_OBSERVATION_CHARS = 300
"""How much of a call's last result the state keeps, for the warning that quotes it."""


def call_key(request: ToolRequest) -> str:
    return key_of(request.call.name, request.args)


def key_of(tool: str, args: Mapping[str, Any]) -> str:
    """A call's key: its tool and the digest of its canonical arguments."""
    return f"{tool}:{args_digest(args)}"


def error_key(tool: str, observation: str) -> str:
    """Identifies an error by its text without keeping the (possibly long) text itself."""
    return f"{tool}:{hashlib.sha256(observation.encode('utf-8')).hexdigest()[:24]}"


def recent(entries: dict[str, T], keep: int = REMEMBERED_KEYS) -> dict[str, T]:
    """The `keep` most recently inserted or updated entries (dicts keep insertion order)."""
    return dict(list(entries.items())[-keep:]) if len(entries) > keep else entries


def touch(entries: dict[str, T], key: str, value: T) -> None:
    """Set `key` and make it the most recent entry."""
    entries.pop(key, None)
    entries[key] = value


def repeat_warning(tool: str, times: int, last: str) -> str:
    return (
        f"Error: you already called {tool} with these exact arguments {times} times; the result "
        f"was: {shorten(last, 500)}. Do not repeat it: try something different or give your "
        "final answer."
    )


def error_warning(times: int) -> str:
    return (
        f"\n[This same error has now happened {times} times. Change your approach or give your "
        "final answer; repeating it again will stop the run.]"
    )


@dataclass(frozen=True)
class Screened:
    """A round after screening: calls to run (repeats replaced by warnings), or a stop."""

    calls: list[PlannedCall]
    state: RepetitionState
    stop_tool: str | None = None


def screen_round(
    state: RepetitionState, planned: Sequence[PlannedCall], max_repeats: int
) -> Screened:
    """Replace the Nth identical call by a warning; a repeat after the warning stops the run."""
    calls = dict(state.calls)
    warned = list(state.warned)
    screened: list[PlannedCall] = []
    for item in planned:
        if not isinstance(item, ToolRequest):
            screened.append(item)
            continue
        key = call_key(item)
        if key in warned:
            return Screened(screened, state, stop_tool=item.call.name)
        done = calls.get(key, 0)
        if done + 1 >= max_repeats:
            warned.append(key)
            last = state.last_observation.get(key, "")
            screened.append(RefusedCall(item.call, repeat_warning(item.call.name, done, last)))
            continue
        touch(calls, key, done + 1)
        screened.append(item)
    return Screened(
        screened,
        state.model_copy(update={"calls": recent(calls), "warned": warned[-REMEMBERED_KEYS:]}),
    )


@dataclass(frozen=True)
class ObservedRound:
    """Observations after error screening, the new state, and the tool to stop for (if any)."""

    observations: list[str]
    state: RepetitionState
    stop_tool: str | None = None


def observe_round(
    state: RepetitionState,
    planned: Sequence[PlannedCall],
    outcomes: Sequence[tuple[str, bool]],
    max_repeats: int,
) -> ObservedRound:
    """Record `(observation, is_error)` per call; warn on the Nth identical error, stop after.

    Warnings written by `screen_round` are not counted as errors of the tool.
    """
    last = dict(state.last_observation)
    errors = dict(state.errors)
    warned = list(state.warned)
    observations: list[str] = []
    stop_tool: str | None = None
    for item, (observation, is_error) in zip(planned, outcomes, strict=True):
        if isinstance(item, ToolRequest):
            touch(
                last,
                call_key(item),
                shorten(observation, REMEMBERED_OBSERVATION_CHARS, one_line=False),
            )
        if not is_error or (isinstance(item, RefusedCall) and "Do not repeat it" in observation):
            observations.append(observation)
            continue
        key = error_key(item.call.name, observation)
        touch(errors, key, errors.get(key, 0) + 1)
        if key in warned:
            stop_tool = item.call.name
        elif errors[key] >= max_repeats:
            warned.append(key)
            observation += error_warning(errors[key])
        observations.append(observation)
    new_state = RepetitionState(
        calls=state.calls,
        last_observation=recent(last),
        errors=recent(errors),
        warned=warned[-REMEMBERED_KEYS:],
    )
    return ObservedRound(observations, new_state, stop_tool)


def repeated_calls_message(tool: str) -> str:
    return (
        f"Stopped: the model kept repeating the same {tool} call (or the same error) after it "
        "was warned. The steps so far are in the result."
    )


# -- repeats of a call that succeeded ------------------------------------------------------------


def remember_successes(state: RepetitionState, steps: Sequence[ToolStep]) -> RepetitionState:
    """`state` with each step that ran and succeeded counted under its call key (the arguments
    it ran with: a reviewer's edited ones, if any)."""
    succeeded = dict(state.succeeded)
    for step in steps:
        if step.status != "ok" or step.args is None or not ran(step):
            continue
        key = key_of(step.tool, step.args)
        earlier = succeeded.get(key)
        touch(
            succeeded,
            key,
            RepeatOf(call_id=step.call_id, times=earlier.times + 1 if earlier else 1),
        )
    if succeeded == state.succeeded:
        return state
    return state.model_copy(update={"succeeded": recent(succeeded)})


def ran(step: ToolStep) -> bool:
    """Whether the step's tool ran: not a question a person answered (`ask_user`)."""
    return step.human is None or step.human.kind.runs_on_approval


@dataclass(frozen=True)
class RepeatScreen:
    """A call screened for repeating one that succeeded: what the person asked is told
    (`repeat_of`), or the observation of a refusal (`refusal`: the call does not run)."""

    repeat_of: RepeatOf | None = None
    refusal: str | None = None


def screen_repeat(
    state: RepetitionState, tool: str, args: Mapping[str, Any], setting: RepeatSetting
) -> RepeatScreen:
    """Whether a call of `tool` with these (validated) arguments repeats one that already ran and
    succeeded in this run, and what `setting` makes of it: `flag` shows it to the person asked
    (`PendingRequest.repeat_of`), `refuse` does not run it."""
    key = key_of(tool, args)
    earlier = state.succeeded.get(key)
    if earlier is None:
        return RepeatScreen()
    last = state.last_observation.get(key)
    repeat = earlier.model_copy(update={"result": last})
    if setting == "refuse":
        return RepeatScreen(repeat, repeat_refusal(tool, repeat))
    return RepeatScreen(repeat)


def repeat_refusal(tool: str, repeat: RepeatOf) -> str:
    """What the model reads for a repeat the policy refuses."""
    result = f" It returned: {shorten(repeat.result, 500)}" if repeat.result else ""
    times = "once" if repeat.times == 1 else f"{repeat.times} times"
    return (
        f"Error: refused by policy: this exact {tool} call (same arguments) already ran and "
        f"succeeded {times} in this run (last as call {repeat.call_id}), and the policy does not "
        f"run it again.{result} Do not repeat it: go on from its result."
    )


def repeat_text(repeat: RepeatOf) -> str:
    """One line for the person asked to approve a repeat (`agent pending`, the Web UI)."""
    times = "once" if repeat.times == 1 else f"{repeat.times} times"
    result = f"; it returned: {shorten(repeat.result, 120)}" if repeat.result else ""
    return (
        f"repeat: this exact call (same tool, same arguments) already ran and succeeded {times} "
        f"in this run (last as call {repeat.call_id}){result}. Approving runs it again."
    )
