"""What the session routes do, through `AgentClient`: start a `SessionWorkflow`, send it a
message the way `agent chat` does (update-with-start: a session that does not exist yet starts
with its first message), read its status."""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowUpdateHandle

from durable_agents.client import AgentClient
from durable_agents.contracts.principals import Principal
from durable_agents.contracts.session import SessionStatus, TurnResult
from durable_agents.servers.http_api.bodies import Message, StartSession
from durable_agents.servers.http_api.errors import ApiError
from durable_agents.servers.http_api.runs import http
from durable_agents.servers.run_control import as_caller


class Sessions:
    """The session routes' work."""

    def __init__(self, agents: AgentClient) -> None:
        self.agents = agents

    def of(self, principal: Principal | None) -> Sessions:
        """These routes for one request of `principal` (`Runs.of`)."""
        return Sessions(as_caller(self.agents, principal))

    async def start(self, body: StartSession) -> tuple[str, str | None]:
        """Start a session with these settings: (workflow id, run id); 409 if it exists."""
        session = await http(self.agents.start_session(body.workflow_input(), id=body.id))
        return session.id, session.run_id

    async def send(self, session_id: str, body: Message) -> WorkflowUpdateHandle[TurnResult]:
        """Queue the message (the session starts if new); returns once the session took it."""
        return await http(self.agents.session(session_id).send_nowait(body.text, by=body.by))

    async def status(self, session_id: str) -> SessionStatus:
        try:
            return await http(self.agents.session(session_id).status())
        except ApiError as error:
            if error.status == 404:
                raise ApiError(404, f"no session with id {session_id!r}") from None
            raise

    async def stream_offset(self, workflow_id: str) -> int:
        """Where the workflow's stream ends now (0 for a workflow that does not exist yet)."""
        return await http(self.agents.run(workflow_id).stream_offset())

    @staticmethod
    def turn_json(result: TurnResult) -> dict[str, Any]:
        return result.model_dump(mode="json")
