"""AG-UI's frontend tools as the session's client-side tools (docs/client-tools.md).

- A `RunAgentInput`'s `tools` (AG-UI `Tool`: name, description, parameters) are the session's
  `client_tools` (`ClientToolSpec`), declared when the thread's session starts;
- the next input's `ToolMessage`s after the last user message (role `tool`, `toolCallId`,
  `content`, `error`?) are the answers: each becomes the `tool_result` update's payload, the
  content read as JSON when it is JSON (a string result otherwise);
- `resume_point`: where the answering AG-UI run picks the turn up again, right after the
  `client_tool_requested` event the earlier AG-UI run ended at.

Pure functions on the protocol's models and our events; the orchestration is in `agui.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ag_ui.core import RunAgentInput, ToolMessage
from pydantic import ValidationError

from durable_agents.contracts.client_tools import ClientToolSpec
from durable_agents.contracts.events import AgentEvent, ClientToolRequested
from durable_agents.servers.http_api.errors import field_problems

EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}
"""A tool that declares no parameters takes none (AG-UI: absent and empty mean the same)."""


def client_tool_specs(
    run_input: RunAgentInput,
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The input's AG-UI tools as `client_tools` entries, and the problems of those that are
    not valid client tools (`[{"field": "tools.0.parameters", "message": ...}]`)."""
    specs: list[dict[str, Any]] = []
    problems: list[dict[str, str]] = []
    for index, tool in enumerate(run_input.tools or []):
        spec = {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters if tool.parameters else EMPTY_PARAMETERS,
        }
        try:
            ClientToolSpec.model_validate(spec)
        except ValidationError as error:
            for problem in field_problems(error.errors(), strip=None):
                where = problem["field"] if problem["field"] != "body" else ""
                field = f"tools.{index}.{where}".rstrip(".")
                problems.append({"field": field, "message": problem["message"]})
            continue
        specs.append(spec)
    return specs, problems


def tool_answers(run_input: RunAgentInput) -> list[ToolMessage]:
    """The tool messages after the input's last user message: the frontend's answers to the
    tool calls the previous AG-UI run ended with (earlier ones were answered before)."""
    answers: list[ToolMessage] = []
    for message in reversed(run_input.messages):
        if getattr(message, "role", None) == "user":
            break
        if isinstance(message, ToolMessage):
            answers.append(message)
    return answers[::-1]


def content_text(message: ToolMessage) -> str:
    """A tool message's content as text (the text parts of a list, joined)."""
    if isinstance(message.content, str):
        return message.content
    parts = [getattr(part, "text", None) for part in message.content]
    return "\n".join(p for p in parts if isinstance(p, str))


def tool_result_payload(message: ToolMessage) -> dict[str, Any]:
    """The `tool_result` update's payload for a frontend's tool message: its `error`, or its
    content as the result (parsed when it is JSON, since a frontend serialises structured
    results into text; the text itself otherwise)."""
    if message.error:
        return {"call_id": message.tool_call_id, "error": message.error}
    text = content_text(message)
    try:
        result: Any = json.loads(text)
    except ValueError:
        result = text
    return {"call_id": message.tool_call_id, "result": result}


def resume_point(
    events: Iterable[AgentEvent], call_ids: Sequence[str], turn: int | None
) -> tuple[list[AgentEvent], int] | None:
    """The turn's events up to the last `client_tool_requested` of `call_ids` (what earlier
    AG-UI runs of this turn showed), and the offset after it; None when none is found."""
    wanted = set(call_ids)
    seen: list[AgentEvent] = []
    end: int | None = None
    shown = 0
    for event in events:
        if turn is not None and event.turn != turn:
            continue
        seen.append(event)
        if isinstance(event, ClientToolRequested) and event.call_id in wanted:
            end, shown = (event.offset or 0) + 1, len(seen)
    if end is None:
        return None
    return seen[:shown], end
