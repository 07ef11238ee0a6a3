"""`RequestKind`: what a run waits for from outside, and what follows from it.

One enum, matched exhaustively (mypy flags a kind added without saying what it means): which
signal or update answers it (`answer_signal`), which kind of decision answers it (`decided_by`:
a plan is approved or rejected like a tool call), whether an answer runs something
(`runs_on_approval`), and how it reads (`wanted`, `noun`). The values are the strings the JSON
has always carried.
"""

from __future__ import annotations

from enum import StrEnum
from typing import assert_never


class RequestKind(StrEnum):
    APPROVAL = "approval"
    """A tool call that runs only if a person approves it."""
    QUESTION = "question"
    """An `ask_user` question, answered with a reply."""
    PLAN = "plan"
    """A plan (plan-and-execute) waiting for approval; answered like an approval."""
    CLIENT_TOOL = "client_tool"
    """A call of a client-side tool (`client_tools`): the client runs it and answers with the
    `tool_result` update; nothing runs on the worker."""

    @property
    def decided_by(self) -> RequestKind:
        """The kind of decision that answers it: a reply for a question, a tool result for a
        client tool, an approval (or a rejection) otherwise."""
        match self:
            case RequestKind.QUESTION:
                return RequestKind.QUESTION
            case RequestKind.APPROVAL | RequestKind.PLAN:
                return RequestKind.APPROVAL
            case RequestKind.CLIENT_TOOL:
                return RequestKind.CLIENT_TOOL
            case _ as unreachable:
                assert_never(unreachable)

    @property
    def answer_signal(self) -> str:
        """What answers it: the signal `reply` or `approve`, or the update `tool_result`."""
        match self.decided_by:
            case RequestKind.QUESTION:
                return "reply"
            case RequestKind.CLIENT_TOOL:
                return "tool_result"
            case _:
                return "approve"

    @property
    def runs_on_approval(self) -> bool:
        """Whether approving it (or approving on timeout) carries something out; a question's
        answer is only text for the model, and a client tool ran where the client is."""
        return self.decided_by is RequestKind.APPROVAL

    @property
    def wanted(self) -> str:
        """What it waits for, as a person reads it: `a reply`, `an approval`, `a tool result`."""
        match self.decided_by:
            case RequestKind.QUESTION:
                return "a reply"
            case RequestKind.CLIENT_TOOL:
                return "a tool result"
            case _:
                return "an approval"

    @property
    def noun(self) -> str:
        """`question`, `approval` (a plan's approval is an approval) or `client tool call`."""
        match self.decided_by:
            case RequestKind.QUESTION:
                return "question"
            case RequestKind.CLIENT_TOOL:
                return "client tool call"
            case _:
                return "approval"
