"""Exit codes of `agent` and the one error type its commands raise for the user to read (the
client's typed errors, `durable_agents.errors`, leave with `CLI_ERROR` too)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from durable_agents.contracts.agent_result import StopReason

if TYPE_CHECKING:
    from durable_agents.client.outcome import RunOutcome

OK: Final = 0
"""The run completed (or a tool stopped it with an answer); the command did what was asked."""
RUN_FAILED: Final = 1
"""The run failed (or timed out)."""
RUN_INCOMPLETE: Final = 2
"""The run stopped at a limit without a full answer: max iterations, budgets, repeats, empty."""
RUN_CANCELLED: Final = 3
"""The run was cancelled or terminated."""
CLI_ERROR: Final = 4
"""The command could not do what was asked: server unreachable, unknown run, refused decision,
bad arguments. Also for command-line usage errors, so that 2 keeps its meaning."""
DETACHED: Final = 130
"""Ctrl-C: the CLI stopped following; the run itself goes on."""


def exit_code_for(stop_reason: StopReason) -> int:
    """The exit code of a finished run: 0 for an answer, 2 for a run cut short by a limit
    (`StopReason.answered` says which, for every reason)."""
    return OK if stop_reason.answered else RUN_INCOMPLETE


def exit_code_of(outcome: RunOutcome) -> int:
    """0 answer, 2 stopped at a limit, 1 failed or timed out, 3 cancelled or terminated."""
    if outcome.result is not None:
        return exit_code_for(outcome.result.stop_reason)
    return RUN_CANCELLED if outcome.ending in ("cancelled", "terminated") else RUN_FAILED


class CliError(Exception):
    """A failure explained in one line for the user (printed as `agent: <message>`, no
    traceback), with the exit code to leave with."""

    def __init__(self, message: str, code: int = CLI_ERROR) -> None:
        super().__init__(message)
        self.code = code
