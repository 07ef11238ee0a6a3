"""Temporal's agent harness peer (`temporal-agent-harness` 0.8.0, `[openai-agents]`): an agent
written like the package's `examples/openai_hello` (an `@agent.defn` workflow, declared as the
README's "A taste" does, with an `AgentWorkflowRunner` and a `WorkflowStream`, one
`@agent.accepts` handler that runs the OpenAI Agents SDK with `Runner.run_streamed`, harness
tools adapted with `as_openai_agent_tool`).

Tools: `calculator` an inline workflow tool (`@agent.tool_defn`), `fixed_output` and `write_file`
durable activity tools (`@agent.activity_tool_defn`); the approval policy is the README's
`allow_inherently_safe()`, so `calculator` and `fixed_output` (declared inherently safe) run at
once and `write_file` waits for a `tool_approval` update.

A benchmark run is one session of one turn: the client starts the agent and sends its `ask`
message in one update-with-start, then signals `close`, which the harness drains: the workflow
completes when the turn has ended (a waiting run is closed once approved: closing denies the
approvals still pending; `bench.peers.systems`). A conversation of many turns (issue 36's
prompt-cache session, `bench.peers.cache`) sends `chat` messages instead, one turn at a time: the
agent keeps the conversation (`to_input_list()`) and runs each message on it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.contrib.workflow_streams import WorkflowStream
from temporalio.workflow import ActivityConfig

with workflow.unsafe.imports_passed_through():
    from agents import Agent as OpenAIAgent
    from agents import Runner
    from temporal_agent_harness.ai_sdks.openai_agents_harness import as_openai_agent_tool
    from temporal_agent_harness.harness import agent
    from temporal_agent_harness.harness.agent_protocol import (
        AgentConfig,
        TextReply,
        ToolApprovalPolicy,
    )
    from temporal_agent_harness.harness.agent_workflow import AgentWorkflowRunner

    from bench.peers.workers import common

TOOL_ACTIVITY = ActivityConfig(
    start_to_close_timeout=common.TOOL_TIMEOUT, retry_policy=common.TOOL_RETRY
)


@agent.tool_defn(inherently_safe=True)
async def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression such as `17 * 25`."""
    return common.calculate(expression)


@agent.activity_tool_defn(inherently_safe=True, activity_config=TOOL_ACTIVITY)
async def fixed_output(n: int, chars: int) -> str:
    """Return `chars` characters of text that depends only on `n`."""
    return common.fixed(n, chars)


@agent.activity_tool_defn(activity_config=TOOL_ACTIVITY)
async def write_file(path: str, content: str) -> str:
    """Write `content` to the file at `path` (needs a person's approval)."""
    return common.wrote(path, content)


TOOLS: dict[str, Any] = {
    "calculator": calculator,
    "fixed_output": fixed_output,
    "write_file": write_file,
}


class BenchAsk(BaseModel):
    """One benchmark turn: the prompt, the tools it may use, most model calls."""

    prompt: str
    tools: list[str] = []
    max_turns: int = 10


@agent.defn(name="HarnessPeer")
class HarnessPeer:
    @agent.init
    def __init__(self, config: AgentConfig) -> None:
        self._runner = AgentWorkflowRunner(
            config,
            stream=WorkflowStream(),
            approval_policy_default=ToolApprovalPolicy.allow_inherently_safe(),
        )
        self._conversation: list[Any] = []

    @agent.accepts
    async def ask(self, message: BenchAsk) -> TextReply:
        """Run one benchmark turn."""
        result = await self._turn(message, message.prompt)
        return TextReply(text=str(result.final_output))

    @agent.accepts
    async def chat(self, message: BenchAsk) -> TextReply:
        """One turn of a conversation (issue 36's prompt-cache session): the run on the
        conversation so far plus this message (the SDK's `to_input_list()`)."""
        said = [*self._conversation, {"role": "user", "content": message.prompt}]
        result = await self._turn(message, said)
        self._conversation = result.to_input_list()
        return TextReply(text=str(result.final_output))

    async def _turn(self, message: BenchAsk, said: Any) -> Any:
        """`Runner.run_streamed` of the bench agent with the message's tools on `said`."""
        sdk_agent = OpenAIAgent(
            name="bench",
            instructions="You are a helpful assistant. Use the tools.",
            model=common.MODEL_NAME,
            tools=[as_openai_agent_tool(self._runner, TOOLS[name]) for name in message.tools],
        )
        result = Runner.run_streamed(
            sdk_agent, input=said, context=self._runner, max_turns=message.max_turns
        )
        async for _event in result.stream_events():
            pass
        return result


WORKFLOWS = [HarnessPeer]
