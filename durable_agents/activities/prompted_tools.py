"""Prompted tool calling (`tool_calling: prompted`), for models or servers without native tool
calling: the tools are described in the prompt, and the calls are read back from the reply's
text, as n8n's ReAct agent and the temporal-ai-agent demo do. Native tool calling stays the
default (`tool_calling: native`); this is opt-in, per endpoint.

Pure: messages and schemas in, wire messages out; a reply's text in, its calls out.

- `prompted_messages` sends the conversation without `tools`: the tool list and the call format
  are added to the system message, the assistant's earlier calls are written back as the blocks
  the model is asked for, and tool results go as user messages in `<tool_response>` tags
  (servers without tool calling often refuse the `tool` role).
- `read_prompted_calls` takes each fenced JSON block (```json ... ``` or ``` ... ```) and each
  `<tool_call>...</tool_call>` block whose JSON is an object with a `name` and `arguments` (or
  `parameters`) as one call; the text around them stays the reply's text. A fenced block that
  is not such an object (a JSON answer, code) stays text.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Collection, Sequence
from typing import Any, Literal

from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelReply, ToolSchema

ToolCalling = Literal["native", "prompted"]
"""How tools reach the model: the API's `tools` field (native) or described in the prompt."""

CALL_BLOCK = re.compile(
    r"```(?:json|tool_call)?[ \t]*\n?(?P<fenced>.*?)```|<tool_call>(?P<tagged>.*?)</tool_call>",
    re.DOTALL,
)
CALL_FORMAT = (
    "To call a tool, write one fenced JSON block per call, exactly like this:\n"
    '```json\n{"name": "tool_name", "arguments": {"argument": "value"}}\n```\n'
    "You may write several blocks when the calls do not depend on each other. The tool's "
    "results come back in <tool_response> tags in the next message. Call a tool only when the "
    "request needs one; otherwise answer in plain text, without any JSON block."
)
NEXT_STEP = (
    "If the request still needs another tool call, make it now; otherwise answer the request in "
    "plain text using these results."
)


def tools_section(tools: Sequence[ToolSchema]) -> str:
    """The system message's part that lists the tools and says how to call them."""
    lines = [
        json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters})
        for t in tools
    ]
    return (
        "# Tools\n\nYou can call these tools (one JSON schema a line):\n"
        + "\n".join(lines)
        + "\n\n"
        + CALL_FORMAT
    )


def call_block(call: ToolCall) -> str:
    """A call as the model is asked to write it."""
    try:
        arguments: Any = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        arguments = call.arguments
    return "```json\n" + json.dumps({"name": call.name, "arguments": arguments}) + "\n```"


def prompted_messages(
    messages: Sequence[ChatMessage], tools: Sequence[ToolSchema]
) -> list[dict[str, Any]]:
    """The conversation as wire messages for a server that gets no `tools` field (no `tools`:
    earlier calls and results are still written out, but no tool is offered)."""
    section = tools_section(tools) if tools else ""
    wire: list[dict[str, Any]] = []
    if section and (not messages or messages[0].role != "system"):
        wire.append({"role": "system", "content": section})
    for index, message in enumerate(messages):
        if message.role == "system" and index == 0:
            text = "\n\n".join(part for part in (message.content, section) if part)
            wire.append({"role": "system", "content": text})
        elif message.role == "assistant":
            parts = [message.content or ""] + [call_block(c) for c in message.tool_calls]
            wire.append({"role": "assistant", "content": "\n".join(p for p in parts if p)})
        elif message.role == "tool":
            result = f"<tool_response>\n{message.content or ''}\n</tool_response>"
            if wire and wire[-1].get("tool_results"):
                wire[-1]["content"] += "\n" + result  # results of one reply: one user message
            else:
                wire.append({"role": "user", "content": result, "tool_results": True})
        else:
            wire.append({"role": message.role, "content": message.content or ""})
    for item in wire:
        if item.pop("tool_results", False):
            item["content"] += "\n" + NEXT_STEP
    return wire


def parse_call(text: str) -> ToolCall | None:
    """One block's text as a call, or None when it is not a `{"name", "arguments"}` object."""
    try:
        data = json.loads(text.strip())
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", data.get("parameters"))
    if arguments is None and set(data) != {"name"}:
        return None
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {})
    return ToolCall(id=f"call_{secrets.token_hex(12)}", name=data["name"], arguments=arguments)


def parse_bare_calls(text: str) -> list[ToolCall]:
    """The calls a whole text written as bare JSON holds: one `{"name", "arguments"}` object,
    or a non-empty list of nothing but such objects (the session journey's model wrote
    `[{"name": "calculator", ...}]`); else none."""
    try:
        data = json.loads(text.strip())
    except json.JSONDecodeError:
        return []
    items = data if isinstance(data, list) else [data]
    calls = [parse_call(json.dumps(item)) if isinstance(item, dict) else None for item in items]
    return [c for c in calls if c is not None] if calls and None not in calls else []


def read_prompted_calls(content: str | None) -> tuple[str | None, list[ToolCall]]:
    """(the text left once the call blocks are taken out, or None; the calls, in order)."""
    if not content:
        return content, []
    calls: list[ToolCall] = []
    kept: list[str] = []
    position = 0
    for match in CALL_BLOCK.finditer(content):
        call = parse_call(match.group("fenced") or match.group("tagged") or "")
        if call is None:
            continue
        calls.append(call)
        kept.append(content[position : match.start()])
        position = match.end()
    if not calls:
        return content, []
    kept.append(content[position:])
    text = "".join(kept).strip()
    return text or None, calls


def with_prompted_calls(reply: ModelReply) -> ModelReply:
    """`reply` with the calls its text holds as tool calls (native calls, if any, are kept)."""
    text, calls = read_prompted_calls(reply.content)
    if not calls:
        return reply
    finish = "tool_calls" if reply.finish_reason in (None, "stop") else reply.finish_reason
    return reply.model_copy(
        update={"content": text, "tool_calls": [*reply.tool_calls, *calls], "finish_reason": finish}
    )


def with_calls_written_as_text(reply: ModelReply, offered: Collection[str]) -> ModelReply:
    """Native tool calling, for a reply whose whole text is tool calls the server did not read:
    `reply` with those calls as its tool calls and no text.

    A small model served with a template that asks for fenced JSON blocks (`make real-model`)
    now and then writes the call as bare JSON, which the server's tool-call parser leaves in
    `content`. Taken as calls only when nothing else is in the text (one bare
    `{"name", "arguments"}` object, a bare JSON list of them, or only call blocks) and every
    call names an offered tool: any other text, a JSON answer included, stays the answer."""
    if reply.tool_calls or not reply.content:
        return reply
    text, calls = read_prompted_calls(reply.content)
    if not calls and (bare := parse_bare_calls(reply.content)):
        text, calls = None, bare
    if not calls or text or any(call.name not in offered for call in calls):
        return reply
    return reply.model_copy(
        update={"content": None, "tool_calls": calls, "finish_reason": "tool_calls"}
    )
