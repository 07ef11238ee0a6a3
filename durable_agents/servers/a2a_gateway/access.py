"""Who an A2A call is, and what it may do.

The `Authentication` middleware (`servers.auth`) has put the request's principal in its state;
`PrincipalContextBuilder` hands it to the SDK's `ServerCallContext` (`state["principal"]`, and
as its `user`), where the request handler and the executor read it with `call_principal`.
`RoleCheckedHandler` checks the role of each call before the SDK's handler runs it: `read` to
get, list and follow tasks, `start` to start one or cancel it, `approve` to answer a task that
waits for a person. A call without the role is a JSON-RPC `InvalidRequest` naming it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
)
from a2a.utils.errors import InvalidRequestError
from starlette.requests import Request

from durable_agents.contracts.principals import Principal, Role
from durable_agents.servers.auth.authenticator import LOCAL_PRINCIPAL
from durable_agents.servers.auth.middleware import (
    PRINCIPAL_STATE,
    RoleMissing,
    principal_of,
    require_role,
)


class PrincipalUser(User):
    """The principal as the SDK's `User` (its name)."""

    def __init__(self, principal: Principal) -> None:
        self.principal = principal

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self.principal.name


class PrincipalContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, with the request's principal."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        principal = principal_of(request)
        context.state[PRINCIPAL_STATE] = principal
        context.user = PrincipalUser(principal)
        return context


def call_principal(context: ServerCallContext | None) -> Principal:
    """The principal of an A2A call (`LOCAL_PRINCIPAL` for a context built without one)."""
    principal = context.state.get(PRINCIPAL_STATE) if context is not None else None
    return principal if isinstance(principal, Principal) else LOCAL_PRINCIPAL


def require_call_role(context: ServerCallContext, role: Role) -> Principal:
    """The call's principal, holding `role`, or a JSON-RPC `InvalidRequest` saying which."""
    try:
        return require_role(call_principal(context), role)
    except RoleMissing as error:
        raise InvalidRequestError(message=str(error)) from None


def send_role(params: SendMessageRequest) -> Role:
    """A message on an existing task answers it (`approve`); any other starts one (`start`)."""
    return "approve" if params.message.task_id else "start"


class RoleCheckedHandler(DefaultRequestHandler):
    """The SDK's handler, checking the role of every call first (see the module docstring),
    then a message with `check`."""

    def check(self, params: SendMessageRequest) -> None:
        """What a subclass checks in a message the caller may send, before any task is made
        (raise an `A2AError` to refuse it)."""

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        require_call_role(context, "read")
        return await super().on_get_task(params, context)

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        require_call_role(context, "read")
        return await super().on_list_tasks(params, context)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        require_call_role(context, "read")
        async for event in super().on_subscribe_to_task(params, context):
            yield event

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        require_call_role(context, "start")
        return await super().on_cancel_task(params, context)

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        require_call_role(context, send_role(params))
        self.check(params)
        return await super().on_message_send(params, context)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        require_call_role(context, send_role(params))
        self.check(params)
        async for event in super().on_message_send_stream(params, context):
            yield event

    async def on_create_task_push_notification_config(self, *args: Any, **kwargs: Any) -> Any:
        require_call_role(_context_of(args, kwargs), "start")
        return await super().on_create_task_push_notification_config(*args, **kwargs)


def _context_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> ServerCallContext:
    context = kwargs.get("context", args[1] if len(args) > 1 else None)
    assert isinstance(context, ServerCallContext)
    return context
