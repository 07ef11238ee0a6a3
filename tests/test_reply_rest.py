"""The end of a streamed reply that no delta carried (`ModelCallFinished.rest`): what the
activity keeps back at its close, how the reply names it, and how each client shows it (the
CLI's live text, the AG-UI translation). The console's handling is checked in the browser
test; a whole run's deltas plus its `rest` are checked against the answer in
`test_event_stream`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from ag_ui.core import TextMessageContentEvent, TextMessageEndEvent

from durable_agents.activities.activity_events import kept_at_close
from durable_agents.cli.live_text import StreamText
from durable_agents.contracts.events import ModelCallFinished, ModelCallStarted, TextDelta
from durable_agents.contracts.model_io import ModelReply
from durable_agents.servers.http_api.agui_mapping import AguiTranslator

AT = datetime(2026, 1, 1, tzinfo=UTC)
BASE: dict[str, Any] = {"workflow_id": "w", "at": AT, "model_call": 1}


@pytest.mark.parametrize(
    ("first_announced", "sent", "reasoning_pending", "kept"),
    [
        (True, False, False, "whole"),  # a quick reply: model_call_finished carries it all
        (True, False, True, "whole"),
        (True, True, False, "rest"),  # a batch went: the text gathered since waits
        (True, True, True, "nothing"),  # reasoning too: one last batch carries both
        (False, True, False, "nothing"),  # a retried attempt publishes its own start and text
        (False, False, False, "nothing"),
    ],
)
def test_what_a_reply_keeps_back_at_its_close(
    first_announced: bool, sent: bool, reasoning_pending: bool, kept: str
) -> None:
    assert (
        kept_at_close(
            first_announced=first_announced, sent=sent, reasoning_pending=reasoning_pending
        )
        == kept
    )


def test_the_rest_is_the_end_of_the_content() -> None:
    reply = ModelReply(model="m", content="Hello, world", text_unsent=5)
    assert reply.text_rest == "world"
    assert ModelReply(model="m", content="Hello").text_rest is None
    assert ModelReply(model="m", content="Hi", text_unsent=3).text_rest is None  # (not a suffix)
    assert "text_unsent" not in ModelReply(model="m", content="x").model_dump_json()
    with pytest.raises(ValueError, match="text_unsent"):
        ModelReply(model="m", content="x", text_unsent=-1)


def test_the_cli_prints_the_rest_of_the_call_it_showed() -> None:
    live = StreamText()

    def show(event: Any) -> list[tuple[str, str]]:
        return [(o.kind, o.value) for o in live.update(event)]

    assert show(ModelCallStarted(**BASE)) == []
    assert show(TextDelta(**BASE, text="Hello, ")) == [("text", "Hello, ")]
    assert show(ModelCallFinished(**BASE, rest="world")) == [("text", "world"), ("end", "")]
    # a call the view did not show the text of (it began after it) prints no orphan end
    assert show(ModelCallFinished(**{**BASE, "model_call": 2}, rest="late")) == [("end", "")]


def test_agui_appends_the_rest_to_the_open_message_before_ending_it() -> None:
    translator = AguiTranslator(thread_id="t", run_id="r", workflow_id="w")
    translator.translate(TextDelta(**BASE, text="Hello, "))
    out = translator.translate(ModelCallFinished(**BASE, rest="world"))
    assert [type(e) for e in out[:2]] == [TextMessageContentEvent, TextMessageEndEvent]
    content = out[0]
    assert isinstance(content, TextMessageContentEvent) and content.delta == "world"
    # another call's rest does not go into this message
    translator.translate(TextDelta(**BASE, text="Hi"))
    other = translator.translate(ModelCallFinished(**{**BASE, "model_call": 2}, rest="x"))
    assert not any(isinstance(e, TextMessageContentEvent) for e in other)
