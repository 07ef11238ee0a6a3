"""Progress a server passes on while it follows a run: MCP progress notifications, A2A `working`
status updates. `ProgressNotes` turns what the run shows into the lines that are new since the
last look, written as the `agent` CLI's live view writes them (`client.render`): from its event
stream, each turn as its model call starts, each tool call as it starts and each progress
report of a running tool (the status cannot show those: a round's steps are recorded when the
round ends); from its successive `status` answers, a new turn (a run with no stream), each tool
step once, each call that starts waiting for a person.
No I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

from durable_agents.client import render
from durable_agents.contracts.agent_status import AgentStatus
from durable_agents.contracts.events import (
    AgentEvent,
    ModelCallStarted,
    ToolCallStarted,
    ToolProgress,
)
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop.review_display import escape_text
from durable_agents.loop.summaries import shorten


@dataclass
class ProgressNotes:
    """What was already told about one run (or one session turn)."""

    turn: int = 0
    max_iterations: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    """As the latest `status` said (the turn lines the stream starts say `so far` with them)."""
    steps: set[str] = field(default_factory=set)
    pending: set[str] = field(default_factory=set)
    started: set[str] = field(default_factory=set)

    def events(self, events: list[AgentEvent]) -> list[str]:
        """The news in the stream: `turn 2/10 · 39 tokens so far` as a turn's model call
        starts, `→ calculator {"expression": "17 * 25"} started (call c1)`, `… crawl: page 3
        of 5 (40%) (call c2)`. A call that already finished among `events` is not told as
        running (its step comes with the status), so reading a stream from its start tells
        only what runs now."""
        finished = {e.call_id for e in events if e.type == "tool_call_finished"}
        news: list[str] = []
        for event in events:
            match event:
                case ModelCallStarted(purpose="turn") if event.model_call > self.turn:
                    self.turn = event.model_call
                    news.append(render.turn_line(self.turn, self.max_iterations, self.usage))
                case ToolCallStarted() if event.call_id not in self.started | finished:
                    self.started.add(event.call_id or "")
                    call = f"{escape_text(event.tool)} {render.short_args(event.arguments)}"
                    news.append(f"→ {call} started (call {event.call_id})")
                case ToolProgress() if event.call_id not in finished:
                    share = f" ({event.fraction:.0%})" if event.fraction is not None else ""
                    message = escape_text(shorten(event.message, render.OBSERVATION_CHARS))
                    tool = escape_text(event.tool)
                    news.append(f"… {tool}: {message}{share} (call {event.call_id})")
        return news

    def lines(self, status: AgentStatus) -> list[str]:
        """The news in `status`: `turn 2/10 · 39 tokens so far`, `✓ calculator {...} → 425`,
        `? write_file {...} waits for approval (call w1)`."""
        self.max_iterations, self.usage = status.max_iterations, status.usage
        news: list[str] = []
        for step in status.recent_steps:  # done in the turns before this one: first
            if step.call_id not in self.steps:
                self.steps.add(step.call_id)
                news.append(render.step_line(step).strip())
        if status.iteration > self.turn:
            self.turn = status.iteration
            news.append(render.turn_line(status.iteration, status.max_iterations, status.usage))
        for request in status.pending:
            if request.call_id not in self.pending:
                self.pending.add(request.call_id)
                news.append(" ".join(line.strip() for line in render.pending_block(request)))
        return news
