"""The offline demo model: a small deterministic policy that needs no API key.

It answers through the same `call_model` activity and returns the same `ModelReply` shape as a
real model, so a newcomer sees the whole flow (model turn, tool activity, model turn, answer) in
the Web UI without any account:
- arithmetic in the prompt -> a `calculator` call, then "The answer is ...";
- a question about the time or date -> a `current_time` call, then "It is now ...";
- "write <text> to <file>" -> a `write_file` call, which waits for a person's approval;
- "ask me ..." -> an `ask_user` question, which waits for a person's reply;
- anything else -> a plain reply.
"""

from __future__ import annotations

import json
import re

from contracts.messages import ChatMessage, ToolCall
from contracts.model_io import ModelReply, ModelRequest
from contracts.usage import TokenUsage
from loop.tokens import estimate_messages_tokens, estimate_tokens

DEMO_MODEL_NAME = "demo-offline"

_ARITHMETIC = re.compile(r"[-+(]*\d[\d.\s]*(?:[-+*/%^x×÷]+\s*[-+(]*\s*\d[\d.\s)]*)+")
_WRITE = re.compile(
    r"\b(?:write|save|put)\s+(?P<q>[\"']?)(?P<text>.+?)(?P=q)\s+(?:to|in|into)\s+"
    r"(?:the\s+)?(?:file\s+)?(?P<path>[\w./-]+\w)",
    re.IGNORECASE,
)
_ASK_ME = re.compile(r"\bask me\b", re.IGNORECASE)
_TIME_WORDS = re.compile(r"\b(time|date|day|today|clock|hour)\b", re.IGNORECASE)
_WORD_OPERATORS = (
    (re.compile(r"\btimes\b|\bmultiplied by\b", re.I), "*"),
    (re.compile(r"\bplus\b", re.I), "+"),
    (re.compile(r"\bminus\b", re.I), "-"),
    (re.compile(r"\bdivided by\b", re.I), "/"),
)


def find_expression(prompt: str) -> str | None:
    """The first arithmetic expression in `prompt` ("what is 17 * 25?" -> "17 * 25")."""
    text = prompt
    for pattern, symbol in _WORD_OPERATORS:
        text = pattern.sub(symbol, text)
    match = _ARITHMETIC.search(text)
    if not match:
        return None
    expression = match.group(0).strip().replace("×", "*").replace("÷", "/").replace("^", "**")
    expression = re.sub(r"(?<=\d)\s*x\s*(?=\d)", " * ", expression)
    return expression if any(op in expression for op in "+-*/%") else None


class DemoChatModel:
    """Deterministic offline policy behind the `ChatModel` interface."""

    default_model = DEMO_MODEL_NAME

    async def complete(self, request: ModelRequest) -> ModelReply:
        available = {t.name for t in request.tools}
        messages = request.messages
        last = messages[-1]
        prompt = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")
        if last.role == "tool":
            tool_name = self._tool_name_for(last.tool_call_id, messages)
            text = self._summarise(tool_name, last.content or "")
            return self._reply(messages, content=text)
        expression = find_expression(prompt)
        if expression and "calculator" in available:
            args = json.dumps({"expression": expression})
            return self._reply(messages, call=ToolCall(id="", name="calculator", arguments=args))
        write = _WRITE.search(prompt)
        if write and "write_file" in available:
            args = json.dumps({"path": write.group("path"), "content": write.group("text")})
            return self._reply(messages, call=ToolCall(id="", name="write_file", arguments=args))
        if _ASK_ME.search(prompt) and "ask_user" in available:
            args = json.dumps({"question": "What would you like me to know?"})
            return self._reply(messages, call=ToolCall(id="", name="ask_user", arguments=args))
        if _TIME_WORDS.search(prompt) and "current_time" in available:
            args = json.dumps({"timezone": "UTC"})
            return self._reply(messages, call=ToolCall(id="", name="current_time", arguments=args))
        return self._reply(
            messages,
            content=(
                f"(offline demo model) You said: {prompt!r}. I can do arithmetic (calculator), "
                "tell the time (current_time), write a file with your approval ('write hello to "
                "notes.txt') and ask you a question ('ask me something'). Set OPENAI_API_KEY on "
                "the worker to use a real model."
            ),
        )

    @staticmethod
    def _tool_name_for(call_id: str | None, messages: list[ChatMessage]) -> str:
        for message in reversed(messages):
            for call in message.tool_calls:
                if call.id == call_id:
                    return call.name
        return ""

    @staticmethod
    def _summarise(tool_name: str, observation: str) -> str:
        if observation.startswith("Error:"):
            return f"The {tool_name or 'tool'} could not help: {observation}"
        if tool_name == "calculator":
            return f"The answer is {observation}."
        if tool_name == "current_time":
            return f"It is now {observation}."
        if tool_name == "ask_user":
            return f"Thank you. You told me: {observation}"
        outcome = observation.splitlines()[-1] if observation else ""
        if tool_name == "write_file" and outcome.startswith("wrote"):
            edited = " (with the arguments a reviewer edited)" if outcome != observation else ""
            return f"Done: I {outcome}{edited}."
        return f"The {tool_name or 'tool'} returned: {observation}"

    def _reply(
        self,
        messages: list[ChatMessage],
        *,
        content: str | None = None,
        call: ToolCall | None = None,
    ) -> ModelReply:
        turn = sum(1 for m in messages if m.role == "assistant") + 1
        calls = [call.model_copy(update={"id": f"demo_call_{turn}"})] if call else []
        # Usage is the estimate the workflow's context fitting uses, so the figures agree.
        prompt_tokens = estimate_messages_tokens(messages)
        completion_tokens = estimate_tokens(
            ChatMessage(role="assistant", content=content, tool_calls=calls)
        )
        return ModelReply(
            model=DEMO_MODEL_NAME,
            content=content,
            tool_calls=calls,
            finish_reason="tool_calls" if call else "stop",
            usage=TokenUsage(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                total_tokens=prompt_tokens + completion_tokens,
            ),
        )
