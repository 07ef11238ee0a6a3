"""`RequestKind`: what a person is asked for, and what follows from it.

One enum, matched exhaustively (mypy flags a kind added without saying what it means): which
signal answers it (`answer_signal`), which kind of decision answers it (`decided_by`: a plan is
approved or rejected like a tool call), whether an answer runs something (`runs_on_approval`),
and how it reads (`wanted`, `noun`). The values are the strings the JSON has always carried.
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

    @property
    def decided_by(self) -> RequestKind:
        """The kind of decision that answers it: a reply for a question, an approval (or a
        rejection) otherwise."""
        match self:
            case RequestKind.QUESTION:
                return RequestKind.QUESTION
            case RequestKind.APPROVAL | RequestKind.PLAN:
                return RequestKind.APPROVAL
            case _ as unreachable:
                assert_never(unreachable)

    @property
    def answer_signal(self) -> str:
        """The signal that answers it: `reply`, or `approve`."""
        return "reply" if self.decided_by is RequestKind.QUESTION else "approve"

    @property
    def runs_on_approval(self) -> bool:
        """Whether approving it (or approving on timeout) carries something out; a question's
        answer is only text for the model."""
        return self.decided_by is RequestKind.APPROVAL

    @property
    def wanted(self) -> str:
        """What it waits for, as a person reads it: `a reply`, `an approval`."""
        return "a reply" if self.decided_by is RequestKind.QUESTION else "an approval"

    @property
    def noun(self) -> str:
        """`question` or `approval` (a plan's approval is an approval)."""
        return "question" if self.decided_by is RequestKind.QUESTION else "approval"
