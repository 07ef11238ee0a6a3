"""The zero-latency fake model for every benchmark target, in a process of its own:

    python -m bench.fake_model        # prints `READY <base url>`, serves until killed

It is `testkit/fake_openai.py` (the Chat Completions wire format, streamed or plain) with one
handler, `testkit.bench_model.bench_model`, that reads what to do from the current request's
last user message, which starts with a directive (`[calc T]`, `[fixed N C]`, `[approve ID]`),
the same for ours and the naive baseline. It keeps no copy of the requests.

Nagle's algorithm is switched off on its connections (`TCP_NODELAY`): with it on, a response
written in two pieces (headers, then body or a stream chunk) waited for the client's delayed ACK,
40 ms, on every request over a kept-alive connection. Only a client that reuses its connection
(ours) paid it, and a zero-latency model took 48 ms a call.
"""

from __future__ import annotations

import signal
import sys
import threading

from durable_agents.testing import fake_openai as fake
from testkit.bench_model import bench_model


class QuietFakeOpenAI(fake.FakeOpenAIServer):
    """Counts requests instead of keeping them (the naive runs send hundreds of megabytes)."""

    def __init__(self) -> None:
        super().__init__()
        self.received = 0

    def _record(self, request: fake.RecordedRequest) -> None:
        with self._lock:
            self.received += 1


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
