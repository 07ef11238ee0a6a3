"""A Pydantic AI peer workflow: the agent `session` (tools: `calculator`) in a conversation of
many turns, for issue 36's prompt-cache session (`bench.peers.cache`). Each `send` update is a
turn, `agent.run` with the conversation so far (`message_history=result.all_messages()`, the
page's way to continue a conversation); it completes once `close` is signalled and the last
turn has ended. Input: {"tools", "max_turns"} (per turn; the tools are the agent's)."""

from __future__ import annotations

from typing import Any, ClassVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent, UsageLimits
    from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow

    from bench.peers.workers import common
    from bench.peers.workers.pai_agents import make_agent

agent = make_agent("session", "calculator")


@workflow.defn(name="PydanticAISession")
class PydanticAISession(PydanticAIWorkflow, common.Conversation):
    __pydantic_ai_agents__: ClassVar[list[Agent[None, Any]]] = [agent]

    @workflow.init
    def __init__(self, params: dict[str, Any]) -> None:
        self._limits = UsageLimits(request_limit=common.run_limit(params) + 1)
        self._messages: list[Any] = []

    @workflow.update
    async def send(self, text: str) -> str:
        result = await agent.run(text, message_history=self._messages, usage_limits=self._limits)
        self._messages = result.all_messages()
        return str(result.output)

    @workflow.run
    async def run(self, params: dict[str, Any]) -> None:
        await self.until_closed()
