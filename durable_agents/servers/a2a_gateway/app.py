"""The A2A server: the SDK's request handler in front of `RunExecutor`, the agent card and the
JSON-RPC routes, as one Starlette app.

A message that starts a task is checked before anything runs (`CheckedRequestHandler`): an
unknown agent, an empty or oversized prompt, or options that are not run settings come back as
a JSON-RPC `InvalidParams` error naming the problem; no task is made and no run starts.

A task is its run (`task_store.RunTaskStore`): its state is read from the workflow, so a restart
of `agent a2a`, or a second gateway on the same namespace, loses no task.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from a2a.helpers.proto_helpers import get_message_text
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.types.a2a_pb2 import SendMessageRequest
from a2a.utils.errors import InvalidParamsError
from google.protobuf import json_format
from starlette.applications import Starlette

from durable_agents.client.run_input import run_input
from durable_agents.errors import InvalidInput
from durable_agents.servers.a2a_gateway.access import PrincipalContextBuilder, RoleCheckedHandler
from durable_agents.servers.a2a_gateway.answers import MAX_ANSWER_CHARS, whole_numbers
from durable_agents.servers.a2a_gateway.card import agent_card
from durable_agents.servers.a2a_gateway.executor import RunExecutor
from durable_agents.servers.a2a_gateway.task_store import RunTaskStore
from durable_agents.servers.run_control import RunControl

RPC_PATH = "/"


class CheckedRequestHandler(RoleCheckedHandler):
    """The SDK's handler, checking the caller's role (`access`), then refusing a bad message
    before it makes a task."""

    def __init__(self, control: RunControl, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.control = control

    def check(self, params: SendMessageRequest) -> None:
        message = params.message
        text = get_message_text(message)
        if message.task_id:  # an answer to a task that waits: read by the executor
            if len(text) > MAX_ANSWER_CHARS:
                raise InvalidParamsError(
                    message=f"message: {len(text)} characters, more than {MAX_ANSWER_CHARS}"
                )
            return
        metadata = (
            whole_numbers(json_format.MessageToDict(message.metadata))
            if message.HasField("metadata")
            else {}
        )
        agent, options = metadata.get("agent"), metadata.get("options")
        if agent is not None and not isinstance(agent, str):
            raise InvalidParamsError(message="metadata.agent: the name of a skill (a string)")
        if options is not None and not isinstance(options, dict):
            raise InvalidParamsError(message="metadata.options: an object of run settings")
        if not text:
            raise InvalidParamsError(message="message: no text part; the text is the prompt")
        try:
            run_input(text, agent, options, self.control.profiles)
        except InvalidInput as error:
            raise InvalidParamsError(message=str(error)) from None


def build_app(control: RunControl, url: str) -> Starlette:
    """The gateway at `url` (its card names it)."""
    card = agent_card(control.profiles, url)
    handler = CheckedRequestHandler(
        control,
        agent_executor=RunExecutor(control),
        task_store=RunTaskStore(control),
        agent_card=card,
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, RPC_PATH, context_builder=PrincipalContextBuilder()),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await handler.aclose()  # lets the tasks in flight stop cleanly

    return Starlette(routes=routes, lifespan=lifespan)
