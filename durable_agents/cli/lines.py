"""Lines typed on stdin, read without ever blocking the event loop.

A daemon thread reads file descriptor 0 with `os.read` (not `sys.stdin`, whose buffer lock a
blocked thread would still hold at interpreter exit) and hands complete lines to the loop.
Waiting for a line is then an ordinary awaitable that can be cancelled, so the live view keeps
polling the run while a question is on screen, and a request decided elsewhere (another shell,
the Web UI) simply withdraws its prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading


class LineReader:
    """The lines of one file descriptor; `None` marks its end (EOF or a read error)."""

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._queue: asyncio.Queue[str | None] | None = None
        self._closed = False
        self.interactive = _isatty(fd)

    @property
    def closed(self) -> bool:
        """True once the end of input was read."""
        return self._closed

    async def readline(self) -> str | None:
        """The next line without its newline, or None at the end of input."""
        if self._closed:
            return None
        if self._queue is None:
            self._start()
        assert self._queue is not None
        line = await self._queue.get()
        if line is None:
            self._closed = True
        return line

    def discard_typed_ahead(self) -> None:
        """Drop lines typed before a prompt was shown (only on a terminal: there they are
        keystrokes meant for an earlier prompt; from a pipe they are the script's answers)."""
        if not self.interactive or self._queue is None:
            return
        while not self._queue.empty():
            line = self._queue.get_nowait()
            if line is None:
                self._queue.put_nowait(None)
                break

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._queue = queue

        def deliver(item: str | None) -> bool:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                return False
            return True

        def pump() -> None:
            pending = b""
            while True:
                try:
                    chunk = os.read(self._fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    if pending:
                        deliver(pending.decode(errors="replace"))
                    deliver(None)
                    return
                pending += chunk
                while b"\n" in pending:
                    raw, pending = pending.split(b"\n", 1)
                    if not deliver(raw.decode(errors="replace").rstrip("\r")):
                        return

        threading.Thread(target=pump, name="agent-stdin", daemon=True).start()


def _isatty(fd: int) -> bool:
    with contextlib.suppress(OSError):
        return os.isatty(fd)
    return False
