"""A Pydantic AI peer workflow: the agent `approve` (tools: `write_file`) beside its workflow, as
https://ai.pydantic.dev/temporal defines one (`bench.peers.workers.pai_agents`)."""

from __future__ import annotations

from typing import Any, ClassVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent

    from bench.peers.workers.pai_agents import PeerWorkflow, make_agent

agent = make_agent("approve", "write_file")


@workflow.defn(name="PydanticAIApprove")
class PydanticAIApprove(PeerWorkflow):
    __pydantic_ai_agents__: ClassVar[list[Agent[None, Any]]] = [agent]

    @workflow.run
    async def run(self, params: dict[str, Any]) -> str:
        return await self.drive(agent, params)
