"""Code mode against plain ReAct on a task of 10 tool calls, "add the prices of these 10 items":

    python -m bench.code_mode [--repeats N]      # its own dev server; prints the table

- ReAct, one call a reply: the model asks for one `price` a turn (11 model calls);
- ReAct, parallel calls: all 10 `price` calls in one reply, the model adds them (2 calls);
- code mode: one `run_code` script gathers the 10 prices and adds them (2 calls).

The model is the zero-latency fake OpenAI-compatible server (`testkit/fake_openai.py`, reached
through the real `openai` client) with a handler that plays each strategy; its token counts are
estimates (4 characters a token) of what each request really carried. The worker runs in this
process (the catalog plus `price`); `run_all` runs it as target 7 on its server.
Measured: model calls, wall time per run (median), the estimated prompt tokens, history events.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from pydantic import BaseModel
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from bench.report import Row
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.runtime.workers import build_workers
from durable_agents.testing import fake_openai as fake
from durable_agents.tools.catalog import CATALOG
from durable_agents.tools.definition import tool

ITEMS = {
    "apple": 1.25, "bread": 3.4, "cheese": 7.9, "dates": 5.15, "eggs": 2.6,
    "flour": 1.99, "grapes": 4.35, "honey": 8.0, "ice": 0.75, "jam": 3.3,
}  # fmt: skip
TOTAL = round(sum(ITEMS.values()), 2)
PROMPT = f"Add the prices of these 10 items: {', '.join(ITEMS)}."
SCRIPT = (
    "import asyncio\n"
    f"items = {list(ITEMS)!r}\n"
    "prices = await asyncio.gather(*[price(item=i) for i in items])\n"
    "round(sum(float(p) for p in prices), 2)\n"
)
STRATEGIES = ("react_one_a_reply", "react_parallel", "code_mode")


class PriceArgs(BaseModel):
    item: str


@tool()
async def price(args: PriceArgs) -> str:
    """The price of one item, in euros."""
    return f"{ITEMS[args.item]:.2f}"


def estimate(text: str) -> int:
    return max(1, len(text) // 4)


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body["messages"] if m.get("role") == "tool"]


def play(body: dict[str, Any]) -> fake.Completion:
    """The model, per strategy (named in the system prompt)."""
    system = body["messages"][0]["content"]
    seen = tool_messages(body)
    usage = estimate(json.dumps(body["messages"]) + json.dumps(body.get("tools", [])))
    names = list(ITEMS)
    if "code_mode" in system:
        if not seen:
            return fake.tool_calls(fake.call("run_code", {"code": SCRIPT}), usage=(usage, 60))
        return fake.text(f"The total is {seen[-1]} euros.", usage=(usage, 8))
    if "react_parallel" in system:
        if not seen:
            calls = [fake.call("price", {"item": n}, id=f"p{i}") for i, n in enumerate(names)]
            return fake.tool_calls(*calls, usage=(usage, 150))
        return fake.text(f"The total is {sum(float(s) for s in seen):.2f} euros.", usage=(usage, 8))
    if len(seen) < len(names):
        item = names[len(seen)]
        return fake.tool_calls(
            fake.call("price", {"item": item}, id=f"p{len(seen)}"), usage=(usage, 15)
        )
    return fake.text(f"The total is {sum(float(s) for s in seen):.2f} euros.", usage=(usage, 8))


def run_input(strategy: str) -> dict[str, Any]:
    base: dict[str, Any] = {
        "prompt": PROMPT,
        "system_prompt": f"You are a helpful assistant. [{strategy}]",
        "tools": ["price"],
        "max_iterations": 20,
    }
    if strategy == "code_mode":
        base["code_mode"] = True
    if strategy == "react_one_a_reply":
        base["parallel_tool_calls"] = False
    return base


async def one(client: Client, queue: str, strategy: str) -> dict[str, Any]:
    started = time.perf_counter()
    handle = await client.start_workflow(
        "AgentWorkflow",
        run_input(strategy),
        id=f"bench-code-{strategy}-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        result_type=AgentResult,
    )
    result = await handle.result()
    wall = time.perf_counter() - started
    assert f"{TOTAL:.2f}" in result.answer or str(TOTAL) in result.answer, result.answer
    history = await handle.fetch_history()
    return {
        "wall_s": wall,
        "model_calls": len(result.model_calls),
        "prompt_tokens": result.usage.prompt_tokens,
        "history_events": len(history.events),
    }


async def measure(client: Client, repeats: int = 5) -> dict[str, Any]:
    """Each strategy `repeats` times, alternating, on an in-process worker."""
    with fake.FakeOpenAIServer() as server, TemporaryDirectory() as workspace:
        server.set_handler(play)
        model = OpenAIChatModel(api_key="sk-bench", base_url=server.base_url, default_model="m")
        queue = f"bench-code-mode-{uuid.uuid4().hex[:8]}"
        samples: dict[str, list[dict[str, Any]]] = {s: [] for s in STRATEGIES}
        async with AsyncExitStack() as stack:
            for worker in build_workers(
                client,
                task_queue=queue,
                model=model,
                catalog=CATALOG.extended(tools=[price]),
                workspace=Path(workspace),
            ):
                await stack.enter_async_context(worker)
            for strategy in STRATEGIES:  # warm up each path once
                await one(client, queue, strategy)
            for _ in range(repeats):
                for strategy in STRATEGIES:
                    samples[strategy].append(await one(client, queue, strategy))
        await model.close()
    return {
        s: {
            "model_calls": runs[0]["model_calls"],
            "wall_s_median": statistics.median(r["wall_s"] for r in runs),
            "prompt_tokens": runs[0]["prompt_tokens"],
            "history_events": runs[0]["history_events"],
            "repeats": len(runs),
        }
        for s, runs in samples.items()
    }


def rows(result: dict[str, Any]) -> list[Row]:
    """Target 7 in `run_all`'s table: code mode (ours column) against ReAct one call a reply."""
    code, react = result["code_mode"], result["react_one_a_reply"]
    return [
        Row(
            "7. 10 tool calls: model calls",
            str(code["model_calls"]),
            str(react["model_calls"]),
            f"{react['model_calls'] / code['model_calls']:.1f}x",
            "code mode fewer",
            code["model_calls"] < react["model_calls"],
        ),
        Row(
            "7. 10 tool calls: wall per run",
            f"{code['wall_s_median'] * 1000:.0f} ms",
            f"{react['wall_s_median'] * 1000:.0f} ms",
            f"{react['wall_s_median'] / code['wall_s_median']:.2f}x",
            "code mode faster",
            code["wall_s_median"] < react["wall_s_median"],
        ),
    ]


def table(result: dict[str, Any]) -> str:
    lines = [
        "| strategy | model calls | wall per run (median) | prompt tokens (est.) "
        "| history events |",
        "| --- | --- | --- | --- | --- |",
    ]
    for strategy, r in result.items():
        lines.append(
            f"| {strategy} | {r['model_calls']} | {r['wall_s_median'] * 1000:.0f} ms | "
            f"{r['prompt_tokens']} | {r['history_events']} |"
        )
    return "\n".join(lines)


async def main_async(repeats: int) -> dict[str, Any]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=f"{sys.prefix}/bin/temporal",
        data_converter=pydantic_data_converter,
        dev_server_log_level="error",
        dev_server_extra_args=[
            "--dynamic-config-value",
            "history.transferProcessorMaxPollRPS=1000",
        ],
    )
    try:
        return await measure(env.client, repeats)
    finally:
        await env.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.code_mode", description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    result = asyncio.run(main_async(args.repeats))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
