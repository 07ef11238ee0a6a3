"""A run's events (`contracts.events`) as AG-UI events (`ag_ui.core`): a pure translator, one
per AG-UI run, that keeps what the protocol needs to pair starts with ends.

- the AG-UI run begins: `RUN_STARTED`;
- `text_delta`: `TEXT_MESSAGE_START` (one message per model call and attempt), `..._CONTENT`;
- `reasoning_delta`: `REASONING_START`, `REASONING_MESSAGE_START`, `..._CONTENT`;
- `model_call_started` / `_retrying` / `_finished`, `tool_call_started`: the open message ends
  (`..._END`);
- `tool_call_started`: `TOOL_CALL_START`, `TOOL_CALL_ARGS` (the arguments as JSON), `..._END`;
- `tool_call_finished`: `TOOL_CALL_RESULT` (a call that never ran, rejected say, starts first);
  not for a frontend tool's call this input answered (the client holds its result already);
- `client_tool_requested` of a frontend tool (one of the input's `tools`): the AG-UI run ends
  there, `RUN_FINISHED` with `outcome` `{"type": "success", "pendingToolCallIds": [...]}`, as
  AG-UI's frontend tools work: the client runs the tool and its next input carries the
  `ToolMessage` (`agui_tools.py`); of a client tool the AG-UI client did not declare: a pending
  request in `STATE_SNAPSHOT`, answered through the HTTP API (`POST /v1/runs/{id}/tool_results`);
- `approval_requested` / `_decided`, `question_asked` / `_answered`, `plan_updated`:
  `STATE_SNAPSHOT` (`{"workflow_id", "pending": [...], "plan": [...]}`) and a `CUSTOM` event;
- every other event (`tool_progress`, `steering_received`, sub-agents, limits, ...): `CUSTOM`;
- `run_finished`: the answer as a message if its text did not stream, then `RUN_FINISHED`;
- `run_failed`: `RUN_ERROR`.

`CUSTOM` events are named `durable_agents.<type>` and carry our event as JSON. A model call
that starts over (retried after a worker died, the next fallback model) starts a new message
(AG-UI cannot take text back); its `durable_agents.model_call_retrying` event tells a client to
drop the partial one (from workers before that event: `durable_agents.model_call_started` with
`attempt` > 1). Text of calls the user does not read (a context summary, a plan) is not sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from durable_agents.contracts.events import (
    AgentEvent,
    ApprovalDecided,
    ApprovalRequested,
    ClientToolRequested,
    ModelCallFinished,
    ModelCallRetrying,
    ModelCallStarted,
    PlanUpdated,
    QuestionAnswered,
    QuestionAsked,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from durable_agents.contracts.stop_reason import StopReason

CUSTOM_PREFIX = "durable_agents."
SHOWN_PURPOSES = frozenset({"turn", "final_answer", "synthesis"})
"""Model calls whose text is the answer the user reads."""


def millis(event: AgentEvent) -> int:
    return int(event.at.timestamp() * 1000)


@dataclass
class AguiTranslator:
    """Translates one AG-UI run's worth of events (see the module docstring)."""

    thread_id: str
    run_id: str
    workflow_id: str
    _text: str | None = None
    _messages: int = 0
    _text_key: tuple[Any, ...] | None = None
    _reasoning: str | None = None
    _streamed: bool = False
    """Text of the latest model call reached the client (the answer need not be sent again)."""
    _started_calls: set[str] = field(default_factory=set)
    _arguments: dict[str, dict[str, Any]] = field(default_factory=dict)
    _pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    _plan: list[dict[str, Any]] | None = None
    frontend_tools: frozenset[str] = frozenset()
    """The AG-UI client's own tools (the input's `tools`): a call of one ends the AG-UI run."""
    answered: frozenset[str] = frozenset()
    """Calls of frontend tools this input answers (its `ToolMessage`s)."""
    finished: bool = False

    def started(self) -> RunStartedEvent:
        return RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)

    def state(self) -> dict[str, Any]:
        """The shared state a `STATE_SNAPSHOT` carries: what waits for a person, the plan."""
        return {
            "workflow_id": self.workflow_id,
            "pending": list(self._pending.values()),
            "plan": self._plan,
        }

    def seen(self, events: list[AgentEvent]) -> None:
        """Take in what earlier AG-UI runs of this turn showed (up to the frontend tool call
        they ended at), sending nothing: the calls they started, what waits."""
        for event in events:
            self.translate(event)
        self._text = self._reasoning = None
        self._streamed = False
        self.finished = False

    def translate(self, event: AgentEvent) -> list[BaseEvent]:
        """The AG-UI events for `event`, in order."""
        at = millis(event)
        if isinstance(event, TextDelta):
            return self._text_delta(event, at) if event.purpose in SHOWN_PURPOSES else []
        if isinstance(event, ReasoningDelta):
            return self._reasoning_delta(event, at) if event.purpose in SHOWN_PURPOSES else []
        out: list[BaseEvent] = []
        if isinstance(event, ModelCallFinished) and event.rest and self._streaming(event):
            # the end of the text no delta carried
            out.append(
                TextMessageContentEvent(message_id=self._text or "", delta=event.rest, timestamp=at)
            )
        if isinstance(
            event, ModelCallStarted | ModelCallRetrying | ModelCallFinished | ToolCallStarted
        ):
            out += self._end_reasoning(at) + self._end_text(at)
        if isinstance(event, ModelCallStarted | ModelCallRetrying) and (
            event.purpose in SHOWN_PURPOSES
        ):
            self._streamed = False
        elif isinstance(event, ToolCallStarted):
            self._arguments[event.call_id or ""] = event.arguments
            return out + self._tool_call(event.call_id or "", event.tool, event.arguments, at)
        elif isinstance(event, ToolCallFinished):
            if event.call_id in self.answered:  # the client's own tool message holds it
                return [*out, self._custom(event)]
            return out + self._tool_result(event, at)
        elif isinstance(event, ClientToolRequested):
            return out + self._client_tool(event, at)
        elif isinstance(event, ApprovalRequested | QuestionAsked):
            if isinstance(event, ApprovalRequested):
                self._arguments[event.call_id or ""] = event.arguments
            self._pending[event.call_id or ""] = event.model_dump(mode="json", exclude_none=True)
            out.append(self._snapshot(at))
        elif isinstance(event, ApprovalDecided | QuestionAnswered):
            self._pending.pop(event.call_id or "", None)
            out.append(self._snapshot(at))
        elif isinstance(event, PlanUpdated):
            self._plan = [step.model_dump(mode="json") for step in event.steps]
            out.append(self._snapshot(at))
        elif isinstance(event, RunFinished):
            return out + self.finish(event.answer, event.stop_reason.value, at)
        elif isinstance(event, RunFailed):
            return out + self.fail(event.error, event.error_type, at)
        return [*out, self._custom(event)]

    def _text_delta(self, event: TextDelta, at: int) -> list[BaseEvent]:
        if not event.text:
            return []
        out = self._end_reasoning(at)
        key = (event.turn, event.model_call, event.purpose, event.attempt)
        if self._text is None or self._text_key != key:
            out += self._end_text(at)
            self._text = self._message_id(event.turn, event.model_call, event.attempt)
            self._text_key = key
            out.append(TextMessageStartEvent(message_id=self._text, role="assistant", timestamp=at))
        out.append(TextMessageContentEvent(message_id=self._text, delta=event.text, timestamp=at))
        self._streamed = True
        return out

    def _reasoning_delta(self, event: ReasoningDelta, at: int) -> list[BaseEvent]:
        if not event.text:
            return []
        out = self._end_text(at)
        if self._reasoning is None:
            self._reasoning = self._message_id(event.turn, event.model_call, event.attempt)
            out.append(ReasoningStartEvent(message_id=self._reasoning, timestamp=at))
            out.append(
                ReasoningMessageStartEvent(
                    message_id=self._reasoning, role="reasoning", timestamp=at
                )
            )
        out.append(
            ReasoningMessageContentEvent(message_id=self._reasoning, delta=event.text, timestamp=at)
        )
        return out

    def _tool_result(self, event: ToolCallFinished, at: int) -> list[BaseEvent]:
        call_id = event.call_id or ""
        out: list[BaseEvent] = []
        if call_id not in self._started_calls:  # it never ran (rejected, denied, ...)
            out += self._end_reasoning(at) + self._end_text(at)
            out += self._tool_call(call_id, event.tool, self._arguments.get(call_id, {}), at)
        out.append(
            ToolCallResultEvent(
                message_id=f"{call_id}:result",
                tool_call_id=call_id,
                content=event.observation,
                role="tool",
                timestamp=at,
            )
        )
        if self._pending.pop(call_id, None) is not None:
            out.append(self._snapshot(at))
        return [*out, self._custom(event)]

    def _client_tool(self, event: ClientToolRequested, at: int) -> list[BaseEvent]:
        """A client tool call waits: the end of this AG-UI run when the AG-UI client runs the
        tool itself, else a pending request in the shared state."""
        call_id = event.call_id or ""
        self._arguments[call_id] = event.arguments
        if call_id in self.answered:
            return [self._custom(event)]
        if event.tool in self.frontend_tools:
            out = self._tool_call(call_id, event.tool, event.arguments, at)
            return [*out, self._custom(event), *self.finish(None, None, at, waiting=[call_id])]
        self._pending[call_id] = event.model_dump(mode="json", exclude_none=True)
        return [self._snapshot(at), self._custom(event)]

    def _message_id(self, turn: int | None, model_call: int, attempt: int) -> str:
        self._messages += 1
        return f"{self.workflow_id}:{turn or 0}:{model_call}:{attempt}:{self._messages}"

    def finish(
        self,
        answer: str | None,
        stop_reason: str | None,
        at: int | None = None,
        waiting: list[str] | None = None,
    ) -> list[BaseEvent]:
        """The end of the AG-UI run: open messages end, the answer is sent as a message when
        its text did not stream, then `RUN_FINISHED` with the answer as its result; or, when
        the turn `waiting` for the client's tool calls, `RUN_FINISHED` naming them in its
        outcome (`pendingToolCallIds`) for the client to answer in its next input."""
        out = self._end_reasoning(at) + self._end_text(at)
        if answer and not self._streamed:
            message_id = f"{self.workflow_id}:{self.run_id}:answer"  # once per AG-UI run
            out += [
                TextMessageStartEvent(message_id=message_id, role="assistant", timestamp=at),
                TextMessageContentEvent(message_id=message_id, delta=answer, timestamp=at),
                TextMessageEndEvent(message_id=message_id, timestamp=at),
            ]
        result: dict[str, Any] = {
            "answer": answer,
            "stop_reason": stop_reason,
            "workflow_id": self.workflow_id,
        }
        outcome = None
        if waiting:
            result["waiting_for"] = waiting
            outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=waiting)
        out.append(
            RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                result=result,
                outcome=outcome,
                timestamp=at,
            )
        )
        self.finished = True
        return out

    def end(
        self, error: str | None, answer: str | None, stop_reason: StopReason | None
    ) -> list[BaseEvent]:
        """The end of a turn known from its result rather than its `run_finished` event."""
        if error:
            return self.fail(error)
        return self.finish(answer, stop_reason.value if stop_reason is not None else None)

    def fail(self, message: str, code: str | None = None, at: int | None = None) -> list[BaseEvent]:
        out = self._end_reasoning(at) + self._end_text(at)
        out.append(RunErrorEvent(message=message or "the run failed", code=code, timestamp=at))
        self.finished = True
        return out

    # -- pieces --------------------------------------------------------------------------------

    def _tool_call(
        self, call_id: str, tool: str, arguments: dict[str, Any], at: int
    ) -> list[BaseEvent]:
        if call_id in self._started_calls:
            return []
        self._started_calls.add(call_id)
        return [
            ToolCallStartEvent(tool_call_id=call_id, tool_call_name=tool, timestamp=at),
            ToolCallArgsEvent(
                tool_call_id=call_id, delta=json.dumps(arguments, ensure_ascii=False), timestamp=at
            ),
            ToolCallEndEvent(tool_call_id=call_id, timestamp=at),
        ]

    def _streaming(self, event: ModelCallFinished) -> bool:
        """Whether the open text message is this call's (whatever the attempt)."""
        key = self._text_key
        if self._text is None or key is None:
            return False
        return bool(key[:3] == (event.turn, event.model_call, event.purpose))

    def _end_text(self, at: int | None) -> list[BaseEvent]:
        if self._text is None:
            return []
        ended = TextMessageEndEvent(message_id=self._text, timestamp=at)
        self._text = None
        return [ended]

    def _end_reasoning(self, at: int | None) -> list[BaseEvent]:
        if self._reasoning is None:
            return []
        message_id, self._reasoning = self._reasoning, None
        return [
            ReasoningMessageEndEvent(message_id=message_id, timestamp=at),
            ReasoningEndEvent(message_id=message_id, timestamp=at),
        ]

    def _snapshot(self, at: int) -> StateSnapshotEvent:
        return StateSnapshotEvent(snapshot=self.state(), timestamp=at)

    def _custom(self, event: AgentEvent) -> CustomEvent:
        return CustomEvent(
            name=CUSTOM_PREFIX + event.type,
            value=event.model_dump(mode="json", exclude_none=True),
            timestamp=millis(event),
        )
