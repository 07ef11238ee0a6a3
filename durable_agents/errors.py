"""The typed errors of `AgentClient` (`durable_agents.client`): each names its cause in one line
(`str(error)`) and carries the facts an interface needs to answer in its own form: the CLI's
exit codes, HTTP statuses with JSON, MCP tool errors, A2A task states.

    AgentError
    ├── InvalidInput         the input cannot apply (a field, a digest's form, edited args ...)
    ├── RunNotFound          no workflow with that id
    ├── RunAlreadyStarted    a run with that id is already running
    ├── RunEnded             the run has ended: nothing to decide, steer or cancel
    ├── NotStartedHere       a run another server started (the client's `via` differs)
    ├── DecisionRefused      the workflow refused an answer (an approval of a question, ...)
    │   ├── CallNotFound     no such call waits (and none with that id was decided)
    │   ├── AlreadyDecided   that call was decided (or answered) already
    │   └── DigestMismatch   the call's arguments are not the ones the digest names
    ├── MessageRefused       a session refused a message, or a run a steering message
    ├── NoWorker             no worker answered in time (is one polling the task queue?)
    ├── LimitExceeded        a start past one of the principal's limits (nothing started)
    ├── TemporalError        the server cannot be reached, or refused the request
    └── RunFailedError       `RunHandle.result()` of a run that did not complete

No error here means anything was recorded: a refused answer leaves the run's history as it was.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from durable_agents.client.outcome import RunOutcome


class AgentError(Exception):
    """A request the client could not carry out; `str(error)` says why in one line."""

    def __init__(self, message: str, *, workflow_id: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.workflow_id = workflow_id


class InvalidInput(AgentError, ValueError):
    """What was sent cannot apply: a bad run setting, an id, a digest that is not hex, edited
    arguments with a rejection. `field` names the part at fault when there is one."""

    def __init__(
        self, message: str, *, field: str | None = None, workflow_id: str | None = None
    ) -> None:
        super().__init__(message, workflow_id=workflow_id)
        self.field = field


class RunNotFound(AgentError):
    """No run (or session) with the workflow id."""


class RunAlreadyStarted(AgentError):
    """A run with the requested workflow id is already running."""


class RunEnded(AgentError):
    """The run has ended (`status`: `completed`, `failed`, ...): nothing waits in it."""

    def __init__(self, message: str, *, workflow_id: str | None = None, status: str = "") -> None:
        super().__init__(message, workflow_id=workflow_id)
        self.status = status


class NotStartedHere(AgentError):
    """The run exists, but not through this kind of server (its memo's `started_via`): an MCP
    client must not approve calls of runs started elsewhere."""


class DecisionRefused(AgentError):
    """The workflow refused an answer to call `call_id` (`reason`: its words); nothing entered
    its history."""

    def __init__(
        self,
        message: str,
        *,
        call_id: str,
        reason: str = "",
        workflow_id: str | None = None,
    ) -> None:
        super().__init__(message, workflow_id=workflow_id)
        self.call_id = call_id
        self.reason = reason or message


class CallNotFound(DecisionRefused):
    """No call with that id waits for a person, and none was decided in the run."""


class AlreadyDecided(DecisionRefused):
    """The call was decided (or a client tool call answered) already: the first answer stands."""


class DigestMismatch(DecisionRefused):
    """The call's arguments are not those the given `args_digest` names (they changed since the
    person looked): nothing was approved."""


class StarterCannotApprove(DecisionRefused):
    """The two-person rule: the principal who started the run cannot approve this call (its
    approval policy says `distinct_from_starter`); the call keeps waiting for someone else."""


class ApproverRoleMissing(DecisionRefused):
    """The call's approval policy names the role that approves it, and the principal who
    tried lacks it (`ApprovalRequirement.role`); nothing was sent to the run."""


class MessageRefused(AgentError):
    """A session refused a message (it has ended, too many wait), or a run or session a
    steering message (no turn is running, the text is empty); nothing entered its history."""


class NoWorker(AgentError):
    """No worker answered a query or took an update in time; `task_queue` is where one should
    poll. An update may still apply when a worker comes."""

    def __init__(
        self,
        message: str,
        *,
        workflow_id: str | None = None,
        task_queue: str | None = None,
        update: bool = False,
    ) -> None:
        super().__init__(message, workflow_id=workflow_id)
        self.task_queue = task_queue
        self.update = update
        """True: an answer (an update) was not taken in time and may still apply; False: a
        query went unanswered."""


class LimitExceeded(AgentError):
    """A start (of a run, a session, or a session's turn) refused by one of the starting
    principal's limits (`PrincipalLimits`: `runs_per_minute`, `concurrent_runs`,
    `tokens_per_day`) before any workflow started or any message was sent. `limit` names it;
    `retry_after` is when to try again, in whole seconds (at least 1): HTTP answers it as 429
    with `Retry-After`, MCP as a tool error, A2A as a `rejected` task."""

    def __init__(self, limit: str, reason: str, retry_after: float) -> None:
        self.limit = limit
        self.reason = reason
        """Why, without the retry hint (the principal, the count and its limit)."""
        self.retry_after = max(1, math.ceil(retry_after))
        super().__init__(f"{reason}; try again in {self.retry_after} s")


class TemporalError(AgentError):
    """The Temporal server cannot be reached, or refused the request for a reason of its own
    (an unknown namespace, a missing permission)."""


class RunFailedError(AgentError):
    """The run did not complete: it failed, was cancelled or terminated, or timed out
    (`outcome` says which, with the error's type and message)."""

    def __init__(self, outcome: RunOutcome) -> None:
        super().__init__(
            f"run {outcome.workflow_id!r} {outcome.ending.replace('_', ' ')}: "
            f"{outcome.error_type}: {outcome.message}",
            workflow_id=outcome.workflow_id,
        )
        self.outcome = outcome
