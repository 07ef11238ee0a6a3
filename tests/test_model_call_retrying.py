"""`model_call_retrying` as the readers take it (issue 31 item 2): a call that starts over voids
the text shown for it, and the call stays open until its one `model_call_finished`. The CLI's
live text says so only where it had shown text; AG-UI ends the open message and the retry's
text goes in a new one. Streams from workers before the event (a second `model_call_started`)
read the same way. Pure translators, no server: the runs themselves are in
`tests/test_crash_streaming.py` (a SIGKILLed worker) and `tests/test_event_stream.py`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ag_ui.core import EventType

from durable_agents.cli.live_text import StreamText
from durable_agents.contracts.events import (
    AGENT_EVENT,
    AgentEvent,
    ModelCallFinished,
    ModelCallRetrying,
    ModelCallStarted,
    TextDelta,
)
from durable_agents.servers.http_api.agui_mapping import AguiTranslator

AT = datetime(2026, 1, 1, tzinfo=UTC)
BASE: dict[str, Any] = {"workflow_id": "w", "at": AT, "model_call": 1}


def lines(live: StreamText, event: Any) -> list[tuple[str, str]]:
    return [(o.kind, o.value) for o in live.update(event)]


def test_a_retried_attempt_voids_the_text_shown_and_says_so() -> None:
    live = StreamText()
    assert lines(live, ModelCallStarted(**BASE)) == []
    assert lines(live, TextDelta(**BASE, text="Half an ans")) == [("text", "Half an ans")]
    [(kind, line)] = lines(live, ModelCallRetrying(**BASE, attempt=2))
    assert kind == "line" and "retried (attempt 2); it starts over" in line
    assert lines(live, TextDelta(**BASE, attempt=1, text="late")) == []  # the void attempt
    assert lines(live, TextDelta(**BASE, attempt=2, text="A whole answer")) == [
        ("text", "A whole answer")
    ]
    assert lines(live, ModelCallFinished(**BASE)) == [("end", "")]


def test_a_start_over_with_nothing_shown_prints_nothing() -> None:
    """A resend after a context cache miss is routine (a worker restarted): no line unless the
    reader had shown text of the call."""
    live = StreamText()
    assert lines(live, ModelCallStarted(**BASE)) == []
    assert lines(live, ModelCallRetrying(**BASE, attempt=1, reason="resend")) == []
    assert lines(live, TextDelta(**BASE, text="Answer")) == [("text", "Answer")]
    [(kind, line)] = lines(live, ModelCallRetrying(**BASE, attempt=1, reason="fallback"))
    assert kind == "line" and "sent to the next model" in line


def test_the_event_reads_back_from_json() -> None:
    event = ModelCallRetrying(**BASE, attempt=3, model="m", reason="retry")
    back = AGENT_EVENT.validate_python(event.model_dump(mode="json"))
    assert isinstance(back, ModelCallRetrying) and back == event


def test_agui_ends_the_open_message_and_starts_the_retry_in_a_new_one() -> None:
    translator = AguiTranslator(thread_id="t", run_id="r", workflow_id="w")
    out: list[Any] = []
    events: list[AgentEvent] = [
        ModelCallStarted(**BASE),
        TextDelta(**BASE, text="Half"),
        ModelCallRetrying(**BASE, attempt=2),
        TextDelta(**BASE, attempt=2, text="Whole"),
        ModelCallFinished(**BASE),
    ]
    for event in events:
        out += translator.translate(event)
    starts = [i for i, e in enumerate(out) if e.type == EventType.TEXT_MESSAGE_START]
    ends = [i for i, e in enumerate(out) if e.type == EventType.TEXT_MESSAGE_END]
    assert len(starts) == 2 and out[starts[0]].message_id != out[starts[1]].message_id
    assert [out[i].message_id for i in ends] == [out[i].message_id for i in starts]
    retry = "durable_agents.model_call_retrying"
    [told] = [i for i, e in enumerate(out) if e.type == EventType.CUSTOM and e.name == retry]
    # the first message ended before the retry's custom event, the retry's text after it
    assert ends[0] < told < starts[1]
