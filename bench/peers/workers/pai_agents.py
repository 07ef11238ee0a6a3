"""What the Pydantic AI peer's workflow modules share (imported through the sandbox, not
re-imported per run): the tools, how an agent is built, and the run loop with its approvals.

Agents are built as https://ai.pydantic.dev/temporal shows: `OpenAIChatModel` on an
`OpenAIProvider` whose client makes no retries (`max_retries=0`, the page's "Activity Retries"),
so Temporal's retry policy (ours) is the only one, and the `TemporalDurability` capability with
our timeouts and retries. Every tool runs as an activity (the page's default; per-tool config
via `metadata={'temporal': ActivityConfig(...)}`); `calculator` can run in the workflow instead
(`metadata={'temporal': False}`, the page's opt-out), the lever ours' local calculator
corresponds to. `write_file` needs approval (`requires_approval`, Pydantic AI's deferred tools):
the run ends with `DeferredToolRequests`, waits for the `approve` signal, and runs again with
the approvals as `DeferredToolResults`.

Each agent lives in a workflow module of its own (`pai_calc`, `pai_calc_wf`, `pai_fixed`,
`pai_approve`), as the page defines one agent beside its workflow: a run's sandbox re-imports
only its own module, and each model request lists only the tools its workload uses (ours sends
only the run's tools too). Input (JSON): {"prompt", "tools", "max_turns"}; result: the text.
"""

from __future__ import annotations

from typing import Any

from openai import AsyncOpenAI
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, Tool, UsageLimits
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from temporalio import workflow
from temporalio.workflow import ActivityConfig

from bench.peers.workers import common


async def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression such as `17 * 25`."""
    return common.calculate(expression)


async def fixed_output(n: int, chars: int) -> str:
    """Return `chars` characters of text that depends only on `n`."""
    return common.fixed(n, chars)


async def write_file(path: str, content: str) -> str:
    """Write `content` to the file at `path` (needs a person's approval)."""
    return common.wrote(path, content)


def activity(timeout: Any) -> dict[str, Any]:
    """A tool's `metadata`: its activity's timeout and our tool retry policy."""
    config = ActivityConfig(start_to_close_timeout=timeout, retry_policy=common.TOOL_RETRY)
    return {"temporal": config}


TOOLS: dict[str, Any] = {
    "calculator": lambda: [Tool(calculator, metadata=activity(common.CALCULATOR_TIMEOUT))],
    "calculator+wf": lambda: [Tool(calculator, metadata={"temporal": False})],
    "fixed_output": lambda: [Tool(fixed_output, metadata=activity(common.TOOL_TIMEOUT))],
    "write_file": lambda: [
        Tool(write_file, requires_approval=True, metadata=activity(common.TOOL_TIMEOUT))
    ],
}


def make_agent(name: str, tools: str) -> Agent[None, Any]:
    """The agent `name` with the tool set `tools` (a key of `TOOLS`)."""
    model = OpenAIChatModel(
        common.MODEL_NAME, provider=OpenAIProvider(openai_client=AsyncOpenAI(max_retries=0))
    )
    durability: TemporalDurability[None] = TemporalDurability(
        activity_config=ActivityConfig(
            start_to_close_timeout=common.TOOL_TIMEOUT, retry_policy=common.TOOL_RETRY
        ),
        model_activity_config=ActivityConfig(
            start_to_close_timeout=common.MODEL_TIMEOUT, retry_policy=common.MODEL_RETRY
        ),
    )
    output: Any = [str, DeferredToolRequests] if tools == "write_file" else str
    return Agent(
        model,
        name=name,
        instructions="You are a helpful assistant. Use the tools.",
        tools=TOOLS[tools](),
        output_type=output,
        capabilities=[durability],
    )


class PeerWorkflow(PydanticAIWorkflow):
    """The run loop every Pydantic AI peer workflow shares, with its `approve` signal."""

    def __init__(self) -> None:
        self._approved = False

    @workflow.signal
    def approve(self, _call: Any = None) -> None:
        self._approved = True

    async def drive(self, agent: Agent[None, Any], params: dict[str, Any]) -> str:
        limits = UsageLimits(request_limit=common.run_limit(params) + 1)
        result = await agent.run(params["prompt"], usage_limits=limits)
        while isinstance(result.output, DeferredToolRequests):
            await workflow.wait_condition(lambda: self._approved)
            self._approved = False
            approvals = {call.tool_call_id: True for call in result.output.approvals}
            result = await agent.run(
                message_history=result.all_messages(),
                deferred_tool_results=DeferredToolResults(approvals=approvals),
                usage_limits=limits,
            )
        return str(result.output)
