"""The answer as it is written: the text a running model call has streamed so far.

`StreamText` reads it from the run's event stream (`text_delta` events, published by the
`call_model` activity in batches as the reply streams): what `agent run`, `watch` and `chat`
print. `LiveText` reads heartbeats instead, for a run that has no stream (a worker from before
the stream):

The `call_model` activity heartbeats a `ModelProgress` (characters received, the tail of the
text, the tool call being written). The server keeps the last heartbeat's details with the
pending activity, so `describe()` shows them, as the Web UI and `temporal workflow describe` do;
`LiveText` turns successive snapshots into what to print: the new end of the text, or a line
when a tool call is being written or the call started over.

Heartbeats come about once a second and carry the last `PROGRESS_TAIL_CHARS` characters, so
text that arrives faster than that shows with a `…` where a stretch was skipped; the complete
answer is printed when the run ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from durable_agents.contracts.events import (
    AgentEvent,
    ModelCallFinished,
    ModelCallRetrying,
    ModelCallStarted,
    TextDelta,
)
from durable_agents.contracts.model_io import CALL_MODEL_ACTIVITY, ModelProgress

if TYPE_CHECKING:
    from durable_agents.client.run_handle import RunHandle

GAP = "…"
"""Printed where text went by between two heartbeats that the tail no longer holds."""


@dataclass(frozen=True)
class LiveCall:
    """A model call in flight and its latest progress."""

    activity_id: str
    attempt: int
    progress: ModelProgress


async def model_calls_in_flight(run: RunHandle) -> list[LiveCall]:
    """The run's pending `call_model` activities whose heartbeat details are a `ModelProgress`
    of their current attempt (details an earlier attempt left are stale, and skipped); the
    description comes through `RunHandle.describe` (its typed errors)."""
    description = await run.describe()
    calls: list[LiveCall] = []
    for pending in description.raw_description.pending_activities:
        if pending.activity_type.name != CALL_MODEL_ACTIVITY:
            continue
        payloads = list(pending.heartbeat_details.payloads)
        if not payloads:
            continue
        try:
            decoded = await description.data_converter.decode(payloads[:1], [ModelProgress])
        except Exception:  # details this CLI cannot read (another version): nothing to show
            continue
        progress = decoded[0] if decoded else None
        if isinstance(progress, ModelProgress) and progress.attempt == pending.attempt:
            calls.append(LiveCall(pending.activity_id, pending.attempt, progress))
    return calls


@dataclass(frozen=True)
class Output:
    """`text`: append to the live text; `line`: a line of its own; `end`: the live text ends."""

    kind: Literal["text", "line", "end"]
    value: str


@dataclass
class LiveText:
    """What is new in each snapshot of one run's model calls."""

    key: tuple[str, int] | None = None
    shown: int = 0
    tools: set[str] = field(default_factory=set)

    def update(self, call: LiveCall) -> list[Output]:
        out: list[Output] = []
        progress = call.progress
        key = (call.activity_id, call.attempt)
        if key != self.key:
            if self.key is not None and self.key[0] == call.activity_id:
                retried = f"  ↻ model call retried (attempt {call.attempt}); it starts over"
                out.append(Output("line", retried))
            self.key, self.shown, self.tools = key, 0, set()
        if progress.chars < self.shown:  # cannot happen within one attempt; start over
            self.shown = 0
        new = progress.chars - self.shown
        if new > 0:
            tail = progress.tail
            text = tail[-new:] if new <= len(tail) else GAP + tail
            out.append(Output("text", text))
            self.shown = progress.chars
        if progress.tool and progress.tool not in self.tools:
            self.tools.add(progress.tool)
            out.append(Output("line", f"  … writing a call to {progress.tool}"))
        return out


@dataclass
class StreamText:
    """What to print of the run's event stream as the model writes: each `text_delta` as it
    comes, a line when a call whose text was shown starts over (`model_call_retrying`: a
    retried attempt, the next fallback model, the whole conversation again; or, from workers
    before that event, another `model_call_started` for the same call; its earlier text is
    void), and the end of the live text when the call's reply is recorded
    (`model_call_finished`, with the end of the text no delta carried: its `rest`)."""

    call: tuple[int | None, int, str] | None = None
    attempt: int = 0
    shown: bool = False
    """Whether text of the open call was printed (a start-over then says it starts over)."""

    def update(self, event: AgentEvent) -> list[Output]:
        match event:
            case ModelCallStarted() | ModelCallRetrying():
                call = (event.turn, event.model_call, event.purpose)
                again = call == self.call and self.shown
                self.call, self.attempt, self.shown = call, event.attempt, False
                return [Output("line", f"  ↻ {start_over(event)}")] if again else []
            case TextDelta():
                call = (event.turn, event.model_call, event.purpose)
                if call != self.call:  # (its start was not seen: the view began after it)
                    self.call, self.attempt = call, event.attempt
                if event.attempt < self.attempt:  # a late piece of a void attempt
                    return []
                self.shown = True
                return [Output("text", event.text)]
            case ModelCallFinished():
                streaming = self.call == (event.turn, event.model_call, event.purpose)
                self.call, self.attempt, self.shown = None, 0, False
                rest = [Output("text", event.rest)] if event.rest and streaming else []
                return [*rest, Output("end", "")]
            case _:
                return []


def start_over(event: ModelCallStarted | ModelCallRetrying) -> str:
    """Why a call whose text was shown starts over, in words."""
    reason = event.reason if isinstance(event, ModelCallRetrying) else None
    if reason == "fallback" or (reason is None and event.attempt == 1):
        why = "sent to the next model"
    elif reason == "resend":
        why = "sent again whole (the worker lacked the conversation)"
    else:
        why = f"retried (attempt {event.attempt})"
    return f"model call {why}; it starts over"
