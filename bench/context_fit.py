"""Issue 36, part 4: `fit_context` in linear time.

Target: in a 300-turn run, CPU per turn at turn 300 is at most 1.2x that at turn 10.

Two measurements, each with the run's `TokenTally` (estimates kept with the scratchpad, what
the engine does) and without it (every message estimated again at every call, as before):

- `decisions`: the loop's context decisions alone (`plan_context` and `summary_due`, as the
  workflow makes them before each model call) on a conversation that grows by one tool round
  a turn (a 400-character assistant message with a call, a 600-character result) to 300
  turns, under a window it overflows (`--window`, default 20,000 tokens) and under one it never
  fills (300,000): CPU per call, the median of turns 6-15 ("turn 10") and of 291-300 ("turn 300").
- `run`: one `AgentWorkflow` of 300 turns on a Temporal dev server with the real worker in this
  process and a model that answers at once (a calculator call a turn): this process's CPU
  between one model call and the next (the workflow's tasks, the tool and model activities),
  the same medians, `--repeats` times (3) each way. The dev server's own CPU is not counted.

    .venv/bin/python -m bench.context_fit [--turns 300] [--out f.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager, nullcontext
from pathlib import Path
from statistics import median
from tempfile import TemporaryDirectory
from typing import Any

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from bench.prompt_cache import serve_engine
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.messages import ChatMessage, ToolCall
from durable_agents.contracts.model_io import ModelReply, ModelRequest
from durable_agents.contracts.scratchpad import Scratchpad
from durable_agents.contracts.usage import TokenUsage
from durable_agents.loop import context_plan
from durable_agents.loop.context_plan import plan_context, summary_due, with_summary
from durable_agents.loop.tokens import TokenTally

EARLY = range(6, 16)
LATE_SPAN = 10


@contextmanager
def without_tally() -> Iterator[None]:
    """Every call estimates every message again (a fresh tally each time): the old cost."""
    kept = context_plan.token_tally
    context_plan.token_tally = lambda pad: TokenTally()
    try:
        yield
    finally:
        context_plan.token_tally = kept


def ratio(per_turn: list[float]) -> dict[str, float]:
    """CPU (µs) at turn 10 and at the last turn (the median of the ten turns around each:
    single turns on a shared 2-core machine vary by ±20%), and their ratio."""
    early = median(per_turn[t - 1] for t in EARLY)
    late = median(per_turn[-LATE_SPAN:])
    return {
        "turn_10_us": round(early * 1e6, 1),
        f"turn_{len(per_turn)}_us": round(late * 1e6, 1),
        "ratio": round(late / early, 3),
    }


def round_of(turn: int) -> list[ChatMessage]:
    call = ToolCall(id=f"call{turn}", name="calculator", arguments=f'{{"expression": "{turn}+1"}}')
    assistant = ChatMessage(role="assistant", content="x" * 400, tool_calls=[call])
    return [assistant, ChatMessage.tool_result(call.id, "y" * 600)]


def decisions(turns: int, window: int, summarize: bool) -> list[float]:
    """CPU per turn of the context decisions on a growing conversation."""
    pad = Scratchpad(messages=[ChatMessage.system("s" * 2_000), ChatMessage.user("p" * 400)])
    per_turn: list[float] = []
    for turn in range(1, turns + 1):
        pad = pad.model_copy(update={"messages": [*pad.messages, *round_of(turn)]})
        started = time.process_time()
        for _ in range(20):  # (one call is below the clock's resolution)
            due = summary_due(pad, window) if summarize else None
            plan_context(pad, window, summarize)
        per_turn.append((time.process_time() - started) / 20)
        if due is not None:  # (the model's summary, as the loop records it)
            pad = with_summary(pad, due, f"summary up to message {due.upto}")
    return per_turn


class InstantModel:
    """Answers at once with a calculator call (a different expression each turn), then text;
    notes this process's CPU time at every call."""

    default_model = "instant"

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.cpu: list[float] = []

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.cpu.append(time.process_time())
        usage = TokenUsage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
        if len(self.cpu) > self.turns:
            return ModelReply(model="instant", content="done", finish_reason="stop", usage=usage)
        turn = len(self.cpu)
        call = ToolCall(id=f"c{turn}", name="calculator", arguments=f'{{"expression": "{turn}+1"}}')
        return ModelReply(
            model="instant",
            content="x" * 400,
            tool_calls=[call],
            finish_reason="tool_calls",
            usage=usage,
        )


async def run(
    turns: int, env: WorkflowEnvironment, workspace: Path, model: InstantModel | None = None
) -> list[float]:
    """CPU per turn of one long `AgentWorkflow` (this process: worker and workflow), answered
    by `model` (default: a new `InstantModel`; `bench.telemetry` passes one that also times)."""
    model = model or InstantModel(turns)
    async with AsyncExitStack() as stack:
        queue = await serve_engine(stack, env.client, model, workspace)
        result = await env.client.execute_workflow(
            "AgentWorkflow",
            {"prompt": "Add one, again and again.", "tools": ["calculator"],
             "max_iterations": turns + 5},
            id=f"context-fit-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AgentResult,
        )  # fmt: skip
    assert len(result.steps) == turns, result.stop_reason
    return [b - a for a, b in zip(model.cpu, model.cpu[1:], strict=False)][:turns]


def measured(label: str, per_turn: list[float]) -> dict[str, Any]:
    print(label, ratio(per_turn), file=sys.stderr)
    return ratio(per_turn)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--window", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    turns = args.turns
    results: dict[str, Any] = {"turns": turns, "decisions": {}, "run": {}}
    for window, summarize in ((args.window, False), (args.window, True), (300_000, False)):
        name = f"window {window}, {'summarize' if summarize else 'drop'}"
        results["decisions"][name] = {
            "tally": measured(name, decisions(turns, window, summarize)),
        }
        with without_tally():
            results["decisions"][name]["no_tally"] = measured(
                name + " (no tally)", decisions(turns, window, summarize)
            )
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=f"{sys.prefix}/bin/temporal",
        data_converter=pydantic_data_converter,
    )
    try:
        with TemporaryDirectory() as root:
            for way in ("tally", "no_tally"):
                runs = []
                for _ in range(args.repeats):
                    with without_tally() if way == "no_tally" else nullcontext():
                        runs.append(measured(f"run ({way})", await run(turns, env, Path(root))))
                results["run"][way] = {
                    "runs": runs,
                    "median_ratio": median(r["ratio"] for r in runs),
                }
    finally:
        await env.shutdown()
    text = json.dumps(results, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
