"""The benchmarks' workload as the fake model reads it: directives at the start of the last user
message, the same for ours and the naive baseline (`bench/fake_model.py` serves this handler in
a process of its own; `tests/test_history_budget.py` uses it in-process):

- `[calc T]`: T rounds of two parallel `calculator` calls, then a short answer;
- `[fixed N C]`: one `fixed_output` call (n=N, C characters), then a 200-character answer;
- `[approve ID]`: one `write_file` call (which needs approval), then a short answer;
- `[writing S]` (with any of them): the reply streams with S seconds before each chunk;
- `[many R C]`: R rounds of one `fixed_output` call each (n = the round, C characters), then a
  200-character answer (one long run: `bench.peers`' long conversation).

The round is the number of assistant messages with tool calls since that user message, so the
handler works whatever else the conversation holds.

`user_message(turn)` is a session turn's 2,000-character message (benchmark target 3, and the
history budget test): a `[fixed turn 2000]` directive, then lines that occur nowhere else.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from durable_agents.testing import fake_openai as fake

ANSWER_CHARS = 200
USER_CHARS = 2000
TOOL_CHARS = 2000
DIRECTIVE = re.compile(r"\[(calc|fixed|approve|many) ([^\]]*)\]")
TURN_DIRECTIVE = re.compile(r"\[fixed (\d+) ")


def answer_text(label: str, chars: int = ANSWER_CHARS) -> str:
    text = f"{label}: the tool returned its deterministic text, summarised here. "
    return (text * (chars // len(text) + 1))[:chars]


def rounds_since_user(messages: list[dict[str, Any]]) -> tuple[str, int]:
    """The last user message and how many tool-calling replies followed it."""
    rounds = 0
    for message in reversed(messages):
        if message["role"] == "user":
            return str(message.get("content") or ""), rounds
        if message["role"] == "assistant" and message.get("tool_calls"):
            rounds += 1
    return "", rounds


WRITING = re.compile(r"\[writing ([0-9.]+)\]")
"""`[writing S]` anywhere in the first 200 characters: stream the reply with S seconds before
each chunk, as a model that writes over time (an instant reply sends no text deltas)."""


def bench_model(body: dict[str, Any]) -> fake.ReplyLike:
    prompt, _ = rounds_since_user(body["messages"])
    reply = directed_reply(body)
    writing = WRITING.search(prompt[:200])
    if writing is None or not isinstance(reply, fake.Completion):
        return reply
    return fake.streamed(reply, piece_seconds=float(writing.group(1)))


def directed_reply(body: dict[str, Any]) -> fake.ReplyLike:
    """The reply the prompt's directive asks for."""
    prompt, rounds = rounds_since_user(body["messages"])
    match = DIRECTIVE.search(prompt[:200])
    if match is None:
        return fake.text("(no directive)")
    kind, args = match.group(1), match.group(2).split()
    if kind == "calc":
        if rounds >= int(args[0]):
            return fake.text(f"done after {rounds} rounds")
        return fake.tool_calls(
            fake.call("calculator", {"expression": f"{rounds + 1} * 17"}),
            fake.call("calculator", {"expression": f"{rounds + 1} + 25"}),
        )
    if kind == "fixed":
        n, chars = int(args[0]), int(args[1])
        if rounds >= 1:
            return fake.text(answer_text(f"turn {n}"))
        return fake.tool_calls(fake.call("fixed_output", {"n": n, "chars": chars}))
    if kind == "many":
        if rounds >= int(args[0]):
            return fake.text(answer_text(f"after {rounds} calls"))
        return fake.tool_calls(fake.call("fixed_output", {"n": rounds + 1, "chars": int(args[1])}))
    if rounds >= 1:
        return fake.text(f"wrote it ({args[0]})")
    return fake.tool_calls(fake.call("write_file", {"path": f"{args[0]}.txt", "content": "ok"}))


def user_message(turn: int) -> str:
    """The turn's 2,000-character message: the directive, then lines that occur nowhere else."""
    head = f"[fixed {turn} {TOOL_CHARS}] turn {turn}: call fixed_output and summarise it."
    lines = [head]
    while sum(len(line) + 1 for line in lines) < USER_CHARS:
        digest = hashlib.sha256(f"user/{turn}/{len(lines)}".encode()).hexdigest()
        lines.append(f"message {turn} line {len(lines)}: {digest}")
    return "\n".join(lines)[:USER_CHARS]


def turn_of_text(text: str) -> int | None:
    """The turn a message's `[fixed N ...]` directive names; None for any other text."""
    match = TURN_DIRECTIVE.match(text)
    return int(match.group(1)) if match else None
