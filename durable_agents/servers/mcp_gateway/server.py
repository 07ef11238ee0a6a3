"""The MCP server: durable agents as tools, on the official `mcp` SDK (`MCPServer`).

- `run_agent`: start a run (prompt, `agent` profile, `options`) and wait for its answer, or
  until it waits for a person (`wait: false`: return the workflow id at once);
- `result`: a run's answer (waiting for it), or what it waits for;
- `send_message`: a message to a session (started if new), waiting for its turn's answer;
- `pending`: what waits for a person in a run or session started here;
- `decide`: approve / reject / reply to one of them, then wait for the run to go on.

While a tool waits, each new turn, tool step and wait goes out as an MCP progress notification
(when the client asked for progress): each tool call as it starts and reports progress, read
from the run's event stream, each step, turn and wait from its `status` (`RunControl.follow_run`,
`servers/progress_notes.py`). Every refusal (unknown
agent, a field out of range, a run not started here, a call already decided) is a tool error
naming the problem; nothing is started then, and no workflow task fails.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError

from durable_agents.client.run_input import DEFAULT_AGENT, DEFAULT_AGENT_DESCRIPTION, run_input
from durable_agents.contracts.principals import Principal, Role
from durable_agents.contracts.session import TurnResult
from durable_agents.contracts.workflow_ids import SafeId
from durable_agents.errors import AgentError
from durable_agents.loop.validation_errors import describe_validation_error
from durable_agents.servers.auth.middleware import RoleMissing, principal_of, require_role
from durable_agents.servers.mcp_gateway.replies import AgentReply, DecisionReply, PendingCall
from durable_agents.servers.run_control import Answer, NoteCallback, Paused, RunControl

T = TypeVar("T")
SERVER_NAME = "durable-agents"
DEFAULT_BY = "mcp client"
WorkflowId = Annotated[SafeId, Field(description="The run's (or session's) workflow id.")]
Prompt = Annotated[
    str, Field(min_length=1, max_length=200_000, description="What the agent is asked to do.")
]


def caller(ctx: Context[Any, Any], role: Role) -> Principal:
    """Who calls the tool (over HTTP: the request's principal, `servers.auth`; over stdio: the
    local user, `LOCAL_PRINCIPAL`), holding `role`: else a tool error naming the role."""
    try:
        return require_role(principal_of(ctx.request_context.request), role)
    except RoleMissing as error:
        raise ToolError(str(error)) from None


def _progress(ctx: Context[Any, Any]) -> NoteCallback:
    """Sends each line of progress as an MCP progress notification (numbered 1, 2, ...:
    progress must grow; there is no total, a run decides its own length)."""
    sent = 0

    async def on_note(line: str) -> None:
        nonlocal sent
        sent += 1
        await ctx.report_progress(sent, None, line)

    return on_note


class McpGateway:
    """The tools, over one `RunControl` (its Temporal client, task queue and profiles)."""

    def __init__(self, control: RunControl) -> None:
        self.control = control
        self._turns: dict[str, str] = {}
        """Session id -> the `send` update of the message in flight, so that `decide` can wait
        for that turn's answer."""

    def agents_text(self) -> str:
        lines = [f"- {DEFAULT_AGENT}: {DEFAULT_AGENT_DESCRIPTION}"]
        lines += [f"- {p.name}: {p.description}" for p in self.control.profiles.by_name().values()]
        return "\n".join(lines)

    async def run_agent(
        self,
        prompt: Prompt,
        ctx: Context[Any, Any],
        agent: Annotated[
            str | None, Field(max_length=64, description="Agent profile (default: assistant).")
        ] = None,
        options: Annotated[
            dict[str, Any] | None,
            Field(
                description="Run settings (AgentInput fields): max_iterations, tools, model, "
                "max_total_tokens, approval_timeout_seconds, output_schema, ..."
            ),
        ] = None,
        wait: Annotated[
            bool, Field(description="Wait for the answer (false: return the workflow id).")
        ] = True,
        workflow_id: Annotated[SafeId | None, Field(description="Workflow id to use.")] = None,
    ) -> AgentReply:
        """Run a durable agent (a Temporal workflow) on a task. Returns its answer; or, when it
        waits for a person (an approval, a question), what waits: answer it with `decide`."""
        control = self.control.of(caller(ctx, "start"))
        payload = _checked(lambda: run_input(prompt, agent, options, control.profiles))
        handle = await _call(control.start(payload, workflow_id=workflow_id))
        if not wait:
            return AgentReply.running(handle.id)
        return await self._follow(control, handle.id, ctx)

    async def result(
        self,
        workflow_id: WorkflowId,
        ctx: Context[Any, Any],
        wait: Annotated[bool, Field(description="Wait while it runs.")] = True,
    ) -> AgentReply:
        """A run's answer (waiting for it, or for it to need a person), or its state now."""
        control = self.control.of(caller(ctx, "read"))
        if not wait:
            outcome = await _call(control.outcome(workflow_id, wait=False))
            if outcome is not None:
                return AgentReply.of_outcome(outcome)
            pending = await _call(control.pending(workflow_id))
            if pending:
                return AgentReply.paused(Paused(workflow_id, pending))
            return AgentReply.running(workflow_id)
        return await self._follow(control, workflow_id, ctx)

    async def send_message(
        self,
        session_id: Annotated[
            SafeId,
            Field(
                description="The session (a conversation that remembers earlier turns); "
                "started with this message if it does not exist.",
            ),
        ],
        text: Annotated[str, Field(min_length=1, max_length=50_000)],
        ctx: Context[Any, Any],
        by: Annotated[str | None, Field(max_length=200)] = None,
    ) -> AgentReply:
        """Send a message to an agent session and wait for its turn's answer (or for the turn
        to wait for a person: answer with `decide` and the session id)."""
        control = self.control.of(caller(ctx, "start"))
        update = await _call(control.send(session_id, text, by or DEFAULT_BY))
        self._turns[session_id] = update.id
        return await self._follow_turn(control, session_id, update.result(), ctx)

    async def pending(self, workflow_id: WorkflowId, ctx: Context[Any, Any]) -> list[PendingCall]:
        """The calls waiting for a person in a run or session started here."""
        control = self.control.of(caller(ctx, "read"))
        return [PendingCall.of(p) for p in await _call(control.pending(workflow_id))]

    async def decide(
        self,
        workflow_id: WorkflowId,
        call_id: Annotated[str, Field(min_length=1, max_length=500)],
        decision: Literal["approve", "reject", "reply"],
        ctx: Context[Any, Any],
        args_digest: Annotated[
            str | None,
            Field(
                description="approve (required): the args_digest `pending` showed (8 to 64 hex "
                "digits); the call is approved only while it has exactly those arguments"
            ),
        ] = None,
        args: Annotated[
            dict[str, Any] | None, Field(description="approve: run it with these arguments")
        ] = None,
        reason: Annotated[str | None, Field(description="reject: why (the model reads it)")] = None,
        text: Annotated[str | None, Field(description="reply: the answer to the question")] = None,
        by: Annotated[str | None, Field(max_length=200, description="who decides")] = None,
        wait: Annotated[bool, Field(description="Then wait for the run to go on.")] = True,
    ) -> DecisionReply:
        """Answer a call that waits for a person: approve or reject a tool call (or a plan),
        or reply to a question. Then (with `wait`) wait for the answer or the next wait."""
        control = self.control.of(caller(ctx, "approve"))
        who = control.agents.maker.name if control.agents.maker else by or DEFAULT_BY
        answer = _checked(
            lambda: Answer.model_validate(
                {
                    "call_id": call_id,
                    "decision": decision,
                    "args_digest": args_digest,
                    "args": args,
                    "reason": reason,
                    "text": text,
                    "by": who,
                }
            )
        )
        decided = await _call(control.decide(workflow_id, answer))
        then = None
        if wait:
            update_id = self._turns.get(workflow_id)
            ignore = {call_id}
            if update_id is not None:
                answered = control.turn_update(workflow_id, update_id).result()
                then = await self._follow_turn(control, workflow_id, answered, ctx, ignore)
            else:
                then = await self._follow(control, workflow_id, ctx, ignore)
        return DecisionReply.of(decided, who, then)

    async def _follow(
        self,
        control: RunControl,
        workflow_id: str,
        ctx: Context[Any, Any],
        ignore: set[str] | None = None,
    ) -> AgentReply:
        run = await _call(control.open(workflow_id))
        ended = await _call(control.follow_run(run, _progress(ctx), ignore or set()))
        if isinstance(ended, Paused):
            return AgentReply.paused(ended)
        return AgentReply.of_outcome(ended)

    async def _follow_turn(
        self,
        control: RunControl,
        session_id: str,
        answered: Awaitable[TurnResult],
        ctx: Context[Any, Any],
        ignore: set[str] | None = None,
    ) -> AgentReply:
        ended = await _call(
            control.follow_turn(session_id, answered, _progress(ctx), ignore or set())
        )
        if isinstance(ended, Paused):
            return AgentReply.paused(ended)
        assert isinstance(ended, TurnResult)
        self._turns.pop(session_id, None)
        return AgentReply.of_turn(session_id, ended)


def _checked(build: Callable[[], T]) -> T:
    """`build()`, with a refusal turned into a tool error naming the field."""
    try:
        return build()
    except AgentError as error:
        raise ToolError(str(error)) from None
    except ValidationError as error:
        raise ToolError(f"invalid input: {describe_validation_error(error)}") from None


async def _call(work: Awaitable[T]) -> T:
    """`await work`, with the client's typed error (`durable_agents.errors`: one line naming
    its cause) turned into an MCP tool error (`isError`, the line as its text)."""
    try:
        return await work
    except AgentError as error:
        raise ToolError(str(error)) from None


def build_server(control: RunControl) -> MCPServer:
    """The MCP server with the gateway's tools."""
    gateway = McpGateway(control)
    server: MCPServer = MCPServer(
        SERVER_NAME,
        instructions="Durable agents: each run is a Temporal workflow that survives restarts "
        "and can wait days for a person. Agents:\n" + gateway.agents_text(),
    )
    server.add_tool(
        gateway.run_agent,
        description=(gateway.run_agent.__doc__ or "") + "\nAgents:\n" + gateway.agents_text(),
    )
    for tool in (gateway.result, gateway.send_message, gateway.pending, gateway.decide):
        server.add_tool(tool)
    return server
