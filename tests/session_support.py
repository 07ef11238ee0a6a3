"""Helpers for session tests: a fake model that answers from the conversation it is sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDConflictPolicy

from durable_agents.contracts.session import SessionStatus, TurnResult
from durable_agents.testing import fake_openai as fake
from testkit.eventually import eventually


def echo_model(body: dict[str, Any]) -> Any:
    """Answers `answer to: <the last user message>` (and so shows what it was sent)."""
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return fake.text(f"answer to: {users[-1]}")


async def send_with_start(
    client: Client, session_id: str, task_queue: str, text: str, session_input: Any = None
) -> tuple[TurnResult, WorkflowHandle[Any, Any]]:
    """Start the session if needed and send one message: one call (update-with-start)."""
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        "SessionWorkflow",
        session_input or {},
        id=session_id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    result = await client.execute_update_with_start_workflow(
        "send", {"text": text}, start_workflow_operation=start, result_type=TurnResult
    )
    return result, await start.workflow_handle()


async def wait_status(
    handle: WorkflowHandle[Any, Any],
    ready: Callable[[SessionStatus], bool],
    timeout: float = 30.0,
) -> SessionStatus:
    """Query the session's `status` (following continue-as-new) until `ready`; return it."""

    async def probe() -> SessionStatus:
        status = await handle.query("status", result_type=SessionStatus)
        assert ready(status), f"session status not ready: {status}"
        return status

    return await eventually(probe, timeout=timeout, what="the session status")
