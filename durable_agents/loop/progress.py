"""How a run's scratchpad moves forward. The scratchpad is immutable: every function here
returns the next one, and the workflow keeps only the latest (one owner, one mutation style).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from durable_agents.contracts.agent_input import AgentInput
from durable_agents.contracts.agent_result import AgentResult, ModelCall, ToolStep
from durable_agents.contracts.messages import ChatMessage, SteerMessage
from durable_agents.contracts.model_io import ModelReply
from durable_agents.contracts.scratchpad import RepetitionState, Scratchpad
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.continuation import MAX_KEPT_STEPS, compact_steps, keep_recent_steps
from durable_agents.loop.conversation import append_round, start_conversation
from durable_agents.loop.stop import Outcome, Stop


def first_scratchpad(params: AgentInput) -> Scratchpad:
    """A new run's scratchpad, or the one a continued run carries."""
    if params.resume is not None:
        return params.resume
    return Scratchpad(
        messages=start_conversation(params),
        model=params.model or "",
        prompt_index=1 + len(params.history),
    )


def next_iteration(pad: Scratchpad) -> Scratchpad:
    return pad.model_copy(update={"iteration": pad.iteration + 1})


@dataclass(frozen=True)
class ModelAnswer:
    """A model's reply, the record of the call, and what it cost (with a cost budget)."""

    reply: ModelReply
    call: ModelCall
    cost_usd: float | None


def steering_message(steer: SteerMessage) -> ChatMessage:
    """How the model reads a message that arrived while it worked."""
    who = steer.by or "the user"
    return ChatMessage.user(f"[New message from {who} while you were working] {steer.text}")


def with_steering(pad: Scratchpad) -> Scratchpad:
    """Queued steering messages join the conversation, in the order they arrived."""
    if not pad.steering:
        return pad
    steered = [steering_message(s) for s in pad.steering]
    return pad.model_copy(update={"messages": [*pad.messages, *steered], "steering": []})


MAX_QUEUED_STEERING = 10
"""Most steering messages waiting for the model's next call (a run waiting for a person takes
no model call, so the queue would grow without bound)."""
MAX_QUEUED_STEERING_CHARS = 50_000
"""Most characters of the steering messages waiting together: they join one model call's input
and the `status` query, which must stay far under Temporal's 2 MB payload limit."""


def steering_refusal(pad: Scratchpad, steer: SteerMessage) -> str | None:
    """Why `steer` cannot be queued now (the queue is full), or None."""
    if len(pad.steering) >= MAX_QUEUED_STEERING:
        return (
            f"{len(pad.steering)} steering messages already wait for the model's next call; "
            f"the most is {MAX_QUEUED_STEERING}"
        )
    queued = sum(len(s.text) for s in pad.steering)
    if queued + len(steer.text) > MAX_QUEUED_STEERING_CHARS:
        return (
            f"the steering messages waiting would hold {queued + len(steer.text)} characters; "
            f"the most is {MAX_QUEUED_STEERING_CHARS}"
        )
    return None


def steered(pad: Scratchpad, steer: SteerMessage) -> Scratchpad:
    """`steer` queued for the model's next call (check `steering_refusal` first)."""
    return pad.model_copy(update={"steering": [*pad.steering, steer]})


def with_spending(pad: Scratchpad, usage: TokenUsage, cost_usd: float | None) -> Scratchpad:
    """Count tokens and money spent (a model call's, or a sub-agent's); the cost stays unknown
    while nothing had a price."""
    cost = pad.cost_usd if cost_usd is None else (pad.cost_usd or 0.0) + cost_usd
    return pad.model_copy(update={"usage": pad.usage + usage, "cost_usd": cost})


def with_model_call(pad: Scratchpad, answer: ModelAnswer) -> Scratchpad:
    """Count a model call's usage and cost; keep its record (the most recent ones)."""
    pad = with_spending(pad, answer.reply.usage, answer.cost_usd)
    return pad.model_copy(
        update={
            "model": answer.reply.model,
            "model_calls": [*pad.model_calls, answer.call][-MAX_KEPT_STEPS:],
        }
    )


@dataclass(frozen=True)
class Round:
    """One round of tool calls after it ran: a step per call (observations final), the
    repetition state after it, and what it means for stopping."""

    steps: list[ToolStep] = field(default_factory=list)
    repetition: RepetitionState | None = None
    stopped_by_tool: str | None = None
    repeated_tool: str | None = None
    spent: TokenUsage = field(default_factory=TokenUsage)
    """What the round's sub-agents spent (it counts toward this run's budgets)."""
    spent_cost_usd: float | None = None

    @property
    def outcome(self) -> Outcome:
        return Outcome(stopped_by_tool=self.stopped_by_tool, repeated_tool=self.repeated_tool)


def with_round(pad: Scratchpad, reply: ModelReply, round_: Round) -> Scratchpad:
    """Append the assistant message and one tool message per call; keep the steps (the most
    recent ones) and the repetition state. A round refused before anything ran changes
    nothing."""
    if not round_.steps:
        return pad
    observations = [(step.call_id, step.observation) for step in round_.steps]
    pad = with_spending(pad, round_.spent, round_.spent_cost_usd).model_copy(
        update={
            "messages": append_round(pad.messages, reply.as_message(), observations),
            "steps": [*pad.steps, *round_.steps],
            "repetition": round_.repetition or pad.repetition,
            "nudged_empty": False,
        }
    )
    return keep_recent_steps(pad)


def run_result(pad: Scratchpad, stop: Stop) -> AgentResult:
    """What a finished run returns: bounded in size however long the run was."""
    return AgentResult(
        answer=stop.answer,
        stop_reason=stop.reason,
        output=stop.output,
        output_errors=pad.output_errors if stop.reason == "invalid_output" else [],
        plan=pad.plan,
        iterations=pad.iteration,
        steps=compact_steps(pad.steps),
        steps_omitted=pad.steps_omitted,
        model_calls=pad.model_calls[-MAX_KEPT_STEPS:],
        usage=pad.usage,
        cost_usd=pad.cost_usd,
        model=pad.model,
    )
