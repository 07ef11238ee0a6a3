"""A Pydantic AI peer workflow: the agent `fixed` (tools: `fixed_output`) beside its workflow, as
https://ai.pydantic.dev/temporal defines one (`bench.peers.workers.pai_agents`)."""

from __future__ import annotations

from typing import Any, ClassVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent

    from bench.peers.workers.pai_agents import PeerWorkflow, make_agent

agent = make_agent("fixed", "fixed_output")


@workflow.defn(name="PydanticAIFixed")
class PydanticAIFixed(PeerWorkflow):
    __pydantic_ai_agents__: ClassVar[list[Agent[None, Any]]] = [agent]

    @workflow.run
    async def run(self, params: dict[str, Any]) -> str:
        return await self.drive(agent, params)
