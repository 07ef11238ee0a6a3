"""`TurnHost`: what a workflow that runs `AgentWorkflow`'s loop inside its own history gives it.

A session runs each turn in its own history (no child run per turn): the turn's model and tool
activities, its approvals and its answer are recorded once, in the session. The loop is the same
object as a standalone run's; these are the few places where being a turn differs.
"""

from __future__ import annotations

from typing import Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.approvals import PendingRequest
    from contracts.model_io import CachedConversation
    from contracts.scratchpad import Scratchpad


class TurnOutgrewSession(Exception):
    """A turn's history grew past its continue-as-new threshold inside the session, which
    cannot continue-as-new while a `send` update waits for the turn: the rest of the turn runs
    as a child run of its own, from `carried` (as a run continues-as-new)."""

    def __init__(self, carried: Scratchpad) -> None:
        super().__init__("the turn outgrew the session's history")
        self.carried = carried


class TurnHost(Protocol):
    """The workflow a turn runs in."""

    @property
    def conversation(self) -> CachedConversation:
        """The worker's context-cache entry the turns share, so a turn's first model call names
        the remembered messages the cache holds instead of sending them again."""
        ...

    def pending_changed(self, pending: list[PendingRequest]) -> None:
        """The turn's calls waiting for a person changed (shown in the host's status)."""
        ...

    def details_changed(self) -> None:
        """The turn's state changed: refresh the Web UI's current details."""
        ...
