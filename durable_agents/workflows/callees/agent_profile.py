"""`AgentCallee`: an agent profile, offered as a tool taking a task; a call runs the profile as
a child `AgentWorkflow` (see `workflows.delegation`)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agents.contracts.agents import AgentProfile, DelegateArgs
    from durable_agents.contracts.model_io import ToolSchema
    from durable_agents.loop.tool_requests import ArgsSchema
    from durable_agents.workflows.callees.protocol import CallContext, CallResult, PlainCallee
    from durable_agents.workflows.delegation import agent_tool_schema, run_child


class AgentCallee(PlainCallee):
    """A `Callee` for one agent profile."""

    def __init__(self, profile: AgentProfile) -> None:
        self._profile = profile

    @property
    def name(self) -> str:
        return self._profile.name

    @property
    def args_schema(self) -> ArgsSchema:
        return DelegateArgs

    def schema(self) -> ToolSchema:
        return agent_tool_schema(self._profile)

    async def invoke(self, context: CallContext) -> CallResult:
        done = await run_child(
            context.params,
            context.pad,
            self._profile,
            context.args["task"],
            context.call.id,
            context.children,
        )
        return CallResult(done.observation, "error" if done.failed else "ok", delegated=done)
