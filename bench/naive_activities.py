"""The naive baseline's activities, written the way the tutorials and cookbook recipes write them.

- `naive_call_model` receives the **full** message list every time and creates a new
  `AsyncOpenAI` client per call (configured from `OPENAI_BASE_URL` / `OPENAI_API_KEY`, as
  `AsyncOpenAI()` reads them), with a plain (not streamed) request;
- one regular activity per tool call, running the same tool functions as ours (`calculator`,
  and the benchmark tools `fixed_output` and `write_file`).

Nothing here is cached between calls: that is the point of the baseline.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI
from pydantic import BaseModel
from temporalio import activity

from durable_agents.tools.builtin.calculator import evaluate, format_result
from testkit.fixed_output import fixed_text

MODEL = "fake-model"


class ModelInput(BaseModel):
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]


class ToolInput(BaseModel):
    name: str
    arguments: str


SHARED: list[AsyncOpenAI] = []
"""With `NAIVE_SHARED_CLIENT=1` (a lever measured by `bench.levers`, not the baseline): one
client for the process."""


@activity.defn
async def naive_call_model(request: ModelInput) -> dict[str, Any]:
    """One chat completion: a new client, the whole conversation, the assistant message back."""
    if os.environ.get("NAIVE_SHARED_CLIENT") == "1":
        if not SHARED:
            SHARED.append(AsyncOpenAI(max_retries=0))
        completion = await SHARED[0].chat.completions.create(
            model=MODEL,
            messages=request.messages,  # type: ignore[arg-type]
            tools=request.tools,  # type: ignore[arg-type]
        )
        return completion.choices[0].message.model_dump(exclude_none=True)
    async with AsyncOpenAI(max_retries=0) as client:
        completion = await client.chat.completions.create(
            model=MODEL,
            messages=request.messages,  # type: ignore[arg-type]
            tools=request.tools,  # type: ignore[arg-type]
        )
    return completion.choices[0].message.model_dump(exclude_none=True)


WORKSPACE = Path("/tmp/naive-bench-workspace")


@activity.defn
async def naive_run_tool(call: ToolInput) -> str:
    """Run one tool call; errors go back to the model as text."""
    import json

    try:
        args = json.loads(call.arguments)
        if call.name == "calculator":
            return format_result(evaluate(args["expression"]))
        if call.name == "fixed_output":
            return fixed_text(int(args["n"]), int(args.get("chars", 2000)))
        if call.name == "write_file":
            path = WORKSPACE / Path(args["path"]).name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(args["content"])
            return f"wrote {len(args['content'])} bytes to {path.name}"
    except Exception as error:
        return f"Error: {error}"
    return f"Error: unknown tool {call.name}"


ACTIVITIES: list[Callable[..., Any]] = [naive_call_model, naive_run_tool]
