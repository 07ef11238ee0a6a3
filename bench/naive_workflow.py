"""The naive baseline: the agent loop the tutorials write, on the default sandbox.

`NaiveAgentWorkflow` keeps the whole message list in the workflow and hands all of it to a
regular model activity on every call; each tool call is a regular activity; no context cache,
no continue-as-new. A call to `write_file` waits for an `approve` signal first (the baseline of
target 4). `NaiveSessionWorkflow` is the same loop behind an update `send`, one long run whose
message list only grows.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from bench.naive_activities import ModelInput, ToolInput, naive_call_model, naive_run_tool

SYSTEM_PROMPT = "You are a helpful assistant. Use the tools when they help."
TIMEOUT = timedelta(seconds=60)


def function(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
            },
        },
    }


TOOLS = [
    function(
        "calculator", "Evaluate an arithmetic expression.", {"expression": {"type": "string"}}
    ),
    function(
        "fixed_output",
        "Return `chars` characters of text that depend only on `n`.",
        {"n": {"type": "integer"}, "chars": {"type": "integer"}},
    ),
    function(
        "write_file",
        "Write a file (needs approval).",
        {"path": {"type": "string"}, "content": {"type": "string"}},
    ),
]
NEEDS_APPROVAL = {"write_file"}


class NaiveTask(BaseModel):
    prompt: str
    tools: list[str] = ["calculator"]
    max_turns: int = 50


class NaiveLoop:
    """The loop: model → tool calls (in parallel) → model ... until a reply without calls."""

    def __init__(self, tools: list[str]) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        self.tools = [t for t in TOOLS if t["function"]["name"] in tools]
        self.approved: set[str] = set()

    async def answer(self, prompt: str, max_turns: int) -> str:
        self.messages.append({"role": "user", "content": prompt})
        for _ in range(max_turns):
            message = await workflow.execute_activity(
                naive_call_model,
                ModelInput(messages=self.messages, tools=self.tools),
                start_to_close_timeout=TIMEOUT,
            )
            self.messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                return str(message.get("content") or "")
            results = await asyncio.gather(*(self.run_tool(call) for call in calls))
            for call, result in zip(calls, results, strict=True):
                self.messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": result}
                )
        return "(max turns reached)"

    async def run_tool(self, call: dict[str, Any]) -> str:
        name = call["function"]["name"]
        if name in NEEDS_APPROVAL:
            await workflow.wait_condition(
                lambda: call["id"] in self.approved or "*" in self.approved
            )
        return await workflow.execute_activity(
            naive_run_tool,
            ToolInput(name=name, arguments=call["function"]["arguments"]),
            start_to_close_timeout=TIMEOUT,
        )


@workflow.defn
class NaiveAgentWorkflow:
    @workflow.init
    def __init__(self, task: NaiveTask) -> None:
        self.loop = NaiveLoop(task.tools)

    @workflow.signal
    def approve(self, call_id: str) -> None:
        self.loop.approved.add(call_id)

    @workflow.run
    async def run(self, task: NaiveTask) -> str:
        return await self.loop.answer(task.prompt, task.max_turns)


@workflow.defn
class NaiveSessionWorkflow:
    @workflow.init
    def __init__(self, tools: list[str]) -> None:
        self.loop = NaiveLoop(tools)
        self.lock = asyncio.Lock()
        self.ended = False

    @workflow.update
    async def send(self, text: str) -> str:
        async with self.lock:
            return await self.loop.answer(text, 10)

    @workflow.signal
    def end(self) -> None:
        self.ended = True

    @workflow.run
    async def run(self, tools: list[str]) -> int:
        await workflow.wait_condition(lambda: self.ended and workflow.all_handlers_finished())
        return len(self.loop.messages)


NAIVE_WORKFLOWS = [NaiveAgentWorkflow, NaiveSessionWorkflow]
