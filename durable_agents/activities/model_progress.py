"""How a model backend tells the running `call_model` activity what it has received so far.

The activity opens a `ProgressBoard` for each call; a streaming backend points it at a probe
(`watch_progress(assembler.progress)`) and the activity's heartbeat loop reads the probe once per
heartbeat, so a fast stream costs nothing per chunk and a silent one still heartbeats. Backends
that do not stream simply never call `watch_progress`.

The board also takes the reply's pieces as they arrive (`TextListener`): a `StreamAssembler`
made while a board is current hands each piece of text or reasoning to the board's listener
(the activity's event stream: `text_delta`, `reasoning_delta`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from durable_agents.contracts.model_io import ModelProgress

ProgressProbe = Callable[[], ModelProgress]
TextListener = Callable[[str, str], None]
"""Takes `(kind, piece)`: `kind` is `text` or `reasoning`."""


class ProgressBoard:
    """The latest progress of one model call: a fixed value, or a probe read on demand."""

    def __init__(self, initial: ModelProgress, on_text: TextListener | None = None) -> None:
        self._initial = initial
        self._probe: ProgressProbe | None = None
        self.on_text = on_text
        """Where the pieces of the reply go as they stream (None: nowhere)."""

    def watch(self, probe: ProgressProbe | None) -> None:
        self._probe = probe

    def current(self) -> ModelProgress:
        probe = self._probe
        if probe is None:
            return self._initial
        progress = probe()
        # The backend knows the text; the board knows which attempt this is.
        return progress.model_copy(update={"attempt": self._initial.attempt})


_BOARD: ContextVar[ProgressBoard | None] = ContextVar("model_progress_board", default=None)


@contextmanager
def progress_board(board: ProgressBoard) -> Iterator[ProgressBoard]:
    """Make `board` the one `watch_progress` reports to, in this context (and in the tasks
    created in it)."""
    token = _BOARD.set(board)
    try:
        yield board
    finally:
        _BOARD.reset(token)


def text_listener() -> TextListener | None:
    """The current board's listener for the reply's pieces (None outside a model activity)."""
    board = _BOARD.get()
    return board.on_text if board is not None else None


def watch_progress(probe: ProgressProbe | None) -> None:
    """Report progress through `probe` (None: stop); does nothing outside a model activity."""
    board = _BOARD.get()
    if board is not None:
        board.watch(probe)
