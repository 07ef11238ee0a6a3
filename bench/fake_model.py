"""The zero-latency fake model for every benchmark target, in a process of its own:

    python -m bench.fake_model        # prints `READY <base url>`, serves until killed

It is `tests/fake_openai.py` (the Chat Completions wire format, streamed or plain) with one
handler that reads what to do from the current request's last user message, which starts with a
directive, the same for ours and the naive baseline:

- `[calc T]`: T rounds of two parallel `calculator` calls, then a short answer;
- `[fixed N C]`: one `fixed_output` call (n=N, C characters), then a 200-character answer;
- `[approve ID]`: one `write_file` call (which needs approval), then a short answer.

The round is the number of assistant messages with tool calls since that user message, so the
handler works whatever else the conversation holds. It keeps no copy of the requests.

Nagle's algorithm is switched off on its connections (`TCP_NODELAY`): with it on, a response
written in two pieces (headers, then body or a stream chunk) waited for the client's delayed ACK,
40 ms, on every request over a kept-alive connection. Only a client that reuses its connection
(ours) paid it, and a zero-latency model took 48 ms a call.
"""

from __future__ import annotations

import re
import signal
import sys
import threading
from typing import Any

from tests import fake_openai as fake

ANSWER_CHARS = 200
DIRECTIVE = re.compile(r"\[(calc|fixed|approve) ([^\]]*)\]")


class QuietFakeOpenAI(fake.FakeOpenAIServer):
    """Counts requests instead of keeping them (the naive runs send hundreds of megabytes)."""

    def __init__(self) -> None:
        super().__init__()
        self.received = 0

    def _record(self, request: fake.RecordedRequest) -> None:
        with self._lock:
            self.received += 1


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


def bench_model(body: dict[str, Any]) -> fake.ReplyLike:
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
    if rounds >= 1:
        return fake.text(f"wrote it ({args[0]})")
    return fake.tool_calls(fake.call("write_file", {"path": f"{args[0]}.txt", "content": "ok"}))


def main() -> int:
    fake._RequestHandler.disable_nagle_algorithm = True  # see the module docstring
    server = QuietFakeOpenAI()
    server.set_handler(bench_model)
    server.start()
    print(f"READY {server.base_url}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
