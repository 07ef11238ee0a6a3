"""Helpers for session tests: a fake model that answers from the conversation it is sent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDConflictPolicy

from contracts.session import SessionStatus, TurnResult
from tests import fake_openai as fake


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
    """Poll the session's `status` (following continue-as-new) until `ready`."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        status = await handle.query("status", result_type=SessionStatus)
        if ready(status):
            return status
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"session status never ready: {status}")
        await asyncio.sleep(0.1)
