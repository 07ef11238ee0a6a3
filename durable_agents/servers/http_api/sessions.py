"""What the session routes do with Temporal: start a `SessionWorkflow`, send it a message the
way `agent chat` does (update-with-start: a session that does not exist yet starts with its
first message), read its status."""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.client import Client, WorkflowUpdateHandle
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.cli.chat import SESSION_TYPE
from durable_agents.cli.chat import send as send_to_session
from durable_agents.cli.commands import QUERY_TIMEOUT
from durable_agents.cli.connection import explain_rpc
from durable_agents.cli.errors import CliError
from durable_agents.contracts.session import SessionStatus, TurnResult
from durable_agents.servers.http_api.bodies import Message, StartSession
from durable_agents.servers.http_api.errors import ApiError
from durable_agents.servers.http_api.runs import VIA
from durable_agents.servers.run_control import STARTED_VIA


class Sessions:
    """The session routes' work."""

    def __init__(self, client: Client, task_queue: str) -> None:
        self.client = client
        self.task_queue = task_queue

    async def start(self, body: StartSession) -> tuple[str, str | None]:
        """Start a session with these settings: (workflow id, run id); 409 if it exists."""
        session_id = body.id or f"session-{uuid.uuid4().hex[:10]}"
        try:
            handle = await self.client.start_workflow(
                SESSION_TYPE,
                body.workflow_input(),
                id=session_id,
                task_queue=self.task_queue,
                memo={STARTED_VIA: VIA},
            )
        except WorkflowAlreadyStartedError:
            raise ApiError(409, f"a session with id {session_id!r} is already running") from None
        except RPCError as error:
            raise ApiError(502, str(explain_rpc(error, None, "cannot start the session"))) from None
        return handle.id, handle.result_run_id

    async def send(self, session_id: str, body: Message) -> WorkflowUpdateHandle[TurnResult]:
        """Queue the message (the session starts if new); returns once the session took it."""
        try:
            return await send_to_session(
                self.client,
                session_id,
                self.task_queue,
                body.text,
                body.by,
                memo={STARTED_VIA: VIA},
            )
        except CliError as error:
            refused = str(error).startswith("message refused")
            raise ApiError(409 if refused else 502, str(error)) from None

    async def status(self, session_id: str) -> SessionStatus:
        try:
            return await self.client.get_workflow_handle(session_id).query(
                "status", result_type=SessionStatus, rpc_timeout=QUERY_TIMEOUT
            )
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise ApiError(404, f"no session with id {session_id!r}") from None
            raise ApiError(502, str(explain_rpc(error, session_id))) from None

    async def stream_offset(self, workflow_id: str) -> int:
        """Where the workflow's stream ends now (0 for a workflow that does not exist yet)."""
        try:
            return await WorkflowStreamClient.create(self.client, workflow_id).get_offset()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return 0
            raise

    @staticmethod
    def turn_json(result: TurnResult) -> dict[str, Any]:
        return result.model_dump(mode="json")
