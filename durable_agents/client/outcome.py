"""How a run ended, read from its workflow result: the answer, or why there is none.

A completed `AgentWorkflow` returns an `AgentResult`; a failed, cancelled, terminated or timed
out one raises. `RunOutcome` folds both into one value with the JSON to show (the CLI's exit
code for it: `cli.errors.exit_code_of`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from temporalio.client import WorkflowFailureError
from temporalio.exceptions import (
    ApplicationError,
    CancelledError,
    FailureError,
    TerminatedError,
    TimeoutError,
)
from temporalio.service import RPCError

from durable_agents.client.connection import WorkflowRun, explain_rpc
from durable_agents.contracts.agent_result import AgentResult

Ending = Literal["completed", "failed", "cancelled", "terminated", "timed_out"]


@dataclass(frozen=True)
class RunOutcome:
    """The end of a run: `result` when it completed, else the failure's type and message."""

    workflow_id: str
    ending: Ending
    result: AgentResult | None = None
    error_type: str | None = None
    message: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The `AgentResult` as JSON, or `{"workflow_id", "status", "error": {type, message}}`."""
        if self.result is not None:
            return self.result.model_dump(mode="json")
        return {
            "workflow_id": self.workflow_id,
            "status": self.ending,
            "error": {"type": self.error_type, "message": self.message},
        }


def _from_failure(workflow_id: str, error: WorkflowFailureError) -> RunOutcome:
    cause = error.cause
    if isinstance(cause, CancelledError):
        return RunOutcome(workflow_id, "cancelled", error_type="Cancelled", message=cause.message)
    if isinstance(cause, TerminatedError):
        return RunOutcome(workflow_id, "terminated", error_type="Terminated", message=cause.message)
    if isinstance(cause, TimeoutError):
        return RunOutcome(workflow_id, "timed_out", error_type="Timeout", message=cause.message)
    if isinstance(cause, ApplicationError):
        return RunOutcome(workflow_id, "failed", error_type=cause.type, message=cause.message)
    if isinstance(cause, FailureError):
        return RunOutcome(
            workflow_id, "failed", error_type=type(cause).__name__, message=cause.message
        )
    return RunOutcome(workflow_id, "failed", error_type=None, message=str(cause or error))


async def await_outcome(handle: WorkflowRun) -> RunOutcome:
    """Wait for the run (following continue-as-new) and say how it ended; `handle` must
    decode its result as `AgentResult` (see `client.connection.describe`)."""
    try:
        result = await handle.result()
    except WorkflowFailureError as error:
        return _from_failure(handle.id, error)
    except RPCError as error:
        raise explain_rpc(error, handle.id, "reading the result") from None
    return RunOutcome(handle.id, "completed", result=result)
