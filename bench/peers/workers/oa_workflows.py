"""The OpenAI Agents SDK peer's workflow (`temporalio-openai-agents` 1.1.0, `openai-agents`
0.22): a plain `Agent` run with `Runner.run` inside a workflow, as the integration's README
shows it. Tools as its README's "Tool Calling" table says: `calculator` is deterministic, so a
`@function_tool` that runs in the workflow; `fixed_output` and `write_file` are activities made
tools with `activity_as_tool`. `write_file` needs approval (`needs_approval`, the SDK's
human-in-the-loop): the run stops with interruptions, waits for the `approve` signal, and
resumes from its `RunState`.

Input (JSON): {"prompt": str, "tools": [names], "max_turns": int}; result: the final output.
`OpenAIAgentsSession`: the same agent in a conversation of many turns (issue 36's prompt cache).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Runner, function_tool
    from temporalio.openai_agents.workflow import activity_as_tool

    from bench.peers.workers import common


@activity.defn
async def fixed_output(n: int, chars: int) -> str:
    """Return `chars` characters of text that depends only on `n`."""
    return common.fixed(n, chars)


@activity.defn
async def write_file(path: str, content: str) -> str:
    """Write `content` to the file at `path` (needs a person's approval)."""
    return common.wrote(path, content)


@function_tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression such as `17 * 25`."""
    return common.calculate(expression)


def tools(names: list[str]) -> list[Any]:
    made: dict[str, Any] = {
        "calculator": lambda: calculator,
        "fixed_output": lambda: activity_as_tool(
            fixed_output, start_to_close_timeout=common.TOOL_TIMEOUT, retry_policy=common.TOOL_RETRY
        ),
        "write_file": lambda: dataclasses.replace(
            activity_as_tool(
                write_file,
                start_to_close_timeout=common.TOOL_TIMEOUT,
                retry_policy=common.TOOL_RETRY,
            ),
            needs_approval=True,
        ),
    }
    return [made[name]() for name in names]


def make_agent(params: dict[str, Any]) -> Agent[Any]:
    """The benchmark's agent with the tools `params` names."""
    return Agent(
        name="bench",
        instructions="You are a helpful assistant. Use the tools.",
        model=common.MODEL_NAME,
        tools=tools(list(params.get("tools", []))),
    )


@workflow.defn(name="OpenAIAgentsPeer")
class OpenAIAgentsPeer:
    def __init__(self) -> None:
        self._approved = False

    @workflow.signal
    def approve(self, _call: Any = None) -> None:
        self._approved = True

    @workflow.run
    async def run(self, params: dict[str, Any]) -> str:
        agent = make_agent(params)
        limit = common.run_limit(params)
        result = await Runner.run(agent, params["prompt"], max_turns=limit)
        while result.interruptions:
            await workflow.wait_condition(lambda: self._approved)
            self._approved = False
            state = result.to_state()
            for item in result.interruptions:
                state.approve(item)
            result = await Runner.run(agent, state, max_turns=limit)
        return str(result.final_output)


@workflow.defn(name="OpenAIAgentsSession")
class OpenAIAgentsSession(common.Conversation):
    """A conversation (issue 36's prompt-cache session, `bench.peers.cache`): each `send`
    update is a turn, `Runner.run` on the conversation so far plus the new message (the SDK's
    manual conversation management, `result.to_input_list()`); it completes once `close` is
    signalled and the last turn has ended. Input: {"tools", "max_turns"} (per turn)."""

    @workflow.init
    def __init__(self, params: dict[str, Any]) -> None:
        self._agent = make_agent(params)
        self._limit = common.run_limit(params)
        self._items: list[Any] = []

    @workflow.update
    async def send(self, text: str) -> str:
        said = [*self._items, {"role": "user", "content": text}]
        result = await Runner.run(self._agent, said, max_turns=self._limit)
        self._items = result.to_input_list()
        return str(result.final_output)

    @workflow.run
    async def run(self, params: dict[str, Any]) -> None:
        await self.until_closed()


WORKFLOWS = [OpenAIAgentsPeer, OpenAIAgentsSession]
ACTIVITIES: list[Callable[..., Any]] = [fixed_output, write_file]
