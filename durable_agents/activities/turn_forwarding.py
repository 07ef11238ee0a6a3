"""`forward_to_turn`: send a session's child turn the update a person sent the session.

A thin adapter over the worker's Temporal client (`contracts.turn_forwarding`): the turn's
answer comes back as the activity's result, its refusal as a non-retryable failure with the
turn's own message and error type, so the session answers exactly what the turn answered.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.contracts.approvals import DECISION_REFUSED, HumanDecision
from durable_agents.contracts.turn_forwarding import (
    FORWARD_TO_TURN_ACTIVITY,
    TURN_ENDED,
    ForwardedUpdate,
)


@activity.defn(name=FORWARD_TO_TURN_ACTIVITY)
async def forward_to_turn(request: ForwardedUpdate) -> HumanDecision:
    """Execute `request.update` on the turn and return its answer (a transport error is
    retried; the same update id makes a retry the same update, answered once)."""
    handle = activity.client().get_workflow_handle(request.workflow_id)
    try:
        return await handle.execute_update(
            request.update, request.payload, id=request.update_id, result_type=HumanDecision
        )
    except WorkflowUpdateFailedError as failed:
        cause = failed.cause
        if isinstance(cause, ApplicationError):
            raise ApplicationError(
                cause.message, type=cause.type or DECISION_REFUSED, non_retryable=True
            ) from None
        raise ApplicationError(str(cause), type=DECISION_REFUSED, non_retryable=True) from None
    except RPCError as error:
        if error.status != RPCStatusCode.NOT_FOUND:
            raise
        raise ApplicationError(
            f"the turn {request.workflow_id} is no longer running ({error.message})",
            type=TURN_ENDED,
            non_retryable=True,
        ) from None
