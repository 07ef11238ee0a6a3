"""Issue 36, part 1: how much of each prompt a real model server serves from its prompt cache.

A 20-turn session and a 30-step tool run go through the real engine (a Temporal dev server,
the real worker, the real `openai` client) to llama-server (`make real-model` prints its base
URL; pass it as `--base-url`). The replies are scripted, so that the run has exactly the shape
asked for whatever a 1.5B model would do: a small proxy forwards every request the worker sends
to llama-server unchanged but with `max_tokens: 1` (the server reads the whole prompt, with its
cache, as it would for a real reply), then puts the scripted reply in the server's answer and
keeps the server's `usage` and `timings`. What is measured is the real server's prompt cache
over the prompts the engine sends, recorded by the engine in each call's usage.

Targets: at least 90% of prompt tokens served from the cache after the first call; a compaction
(the context window full, old messages cut) costs at most one full prompt re-read (the tokens
read anew by the call after a cut, against that call's whole prompt).

    .venv/bin/python -m bench.prompt_cache --base-url http://127.0.0.1:PORT/v1 [--out f.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_agents.activities.chat_model import ChatModel
from durable_agents.activities.context_cache import ContextCache
from durable_agents.activities.openai_model import OpenAIChatModel
from durable_agents.activities.streaming import usage_from
from durable_agents.contracts.agent_result import AgentResult
from durable_agents.contracts.session import TurnResult
from durable_agents.contracts.usage import TokenUsage
from durable_agents.runtime.workers import build_workers
from durable_agents.testing import fake_openai as fake
from durable_agents.tools.catalog import CATALOG

Script = Callable[[int, dict[str, Any]], dict[str, Any]]
"""The scripted assistant message for the proxy's `n`-th request (and the request body)."""

WINDOW = 2_000
"""Ours' `max_context_tokens` unless told otherwise (`--window`; the peers' table's runs)."""
THOUGHT = (
    "I add one to the running total with the calculator, as the task asks, and keep going "
    "until every step is done; the totals so far are in the tool results above. "
)


class ScriptedProxy(ThreadingHTTPServer):
    """Forwards chat completions to the real server with `max_tokens: 1` and answers with the
    scripted message in its place (usage and timings are the real server's)."""

    def __init__(self, upstream: str, script: Script) -> None:
        self.upstream = upstream.rstrip("/")
        self.script = script
        self.asked = 0
        self.disturbed: list[bool] = []
        """Per request: whether another client used the server since this proxy's previous
        request (llama-server's one slot then held their prompt, not ours)."""
        self._last_task: int | None = None
        self.metered: list[TokenUsage] = []
        """Per request: the prompt and cached tokens the real server's answer reported (its
        `usage`, and llama-server's `timings`), whichever client sent it: how the peers'
        runs are measured (`bench.peers.cache`), which keep no usage of their own to read."""
        super().__init__(("127.0.0.1", 0), _ProxyHandler)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def _slot_task(self) -> int | None:
        """The id of the last task llama-server's slot ran (None: not llama-server)."""
        try:
            with urllib.request.urlopen(self.upstream.removesuffix("/v1") + "/slots") as reply:
                task = json.loads(reply.read())[0]["id_task"]
        except (OSError, ValueError, LookupError, TypeError):
            return None
        return task if isinstance(task, int) else None

    def forward(self, body: dict[str, Any]) -> dict[str, Any]:
        """The real server's answer to `body`; waits out a restart of the server (10 min)."""
        for _ in range(120):
            before = self._slot_task()
            try:
                request = urllib.request.Request(
                    f"{self.upstream}/chat/completions",
                    data=json.dumps(body).encode(),
                    headers={"content-type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=600) as response:
                    answer: dict[str, Any] = json.loads(response.read())
            except urllib.error.HTTPError as error:
                if 400 <= error.code < 500:  # a request the server refuses (e.g. too long)
                    raise
                time.sleep(5)
                continue
            except (OSError, ValueError):
                time.sleep(5)
                continue
            self.disturbed.append(before is not None and before != self._last_task)
            self._last_task = self._slot_task()
            self.metered.append(
                usage_from(answer.get("usage"), answer.get("timings")) or TokenUsage()
            )
            return answer
        raise RuntimeError("the model server did not answer for 10 minutes")


@contextmanager
def scripted_proxy(upstream: str, script: Script) -> Iterator[ScriptedProxy]:
    """A `ScriptedProxy` in front of `upstream`, serving on a thread until the block ends."""
    proxy = ScriptedProxy(upstream, script)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        yield proxy
    finally:
        proxy.shutdown()


class _ProxyHandler(BaseHTTPRequestHandler):
    server: ScriptedProxy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        proxy = self.server
        message = proxy.script(proxy.asked, body)
        forwarded = {**body, "stream": False, "max_tokens": 1}
        forwarded.pop("stream_options", None)
        try:
            answer = proxy.forward(forwarded)
        except urllib.error.HTTPError as error:  # passed on as it came, the step not taken
            self._send(error.code, error.read(), error.headers.get("content-type", "text/plain"))
            return
        proxy.asked += 1
        answer["choices"] = [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ]
        if body.get("stream"):
            self._send(200, event_stream(answer, body), "text/event-stream")
        else:
            self._send(200, json.dumps(answer).encode(), "application/json")

    def _send(self, status: int, data: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def event_stream(answer: dict[str, Any], body: dict[str, Any]) -> bytes:
    """`answer` (a whole completion) as the server would have streamed it to a client that
    asked for a stream (a peer streaming its model calls): the text, then the tool calls, then
    the finish reason, then the server's usage and timings when `stream_options.include_usage`
    asked for them, then `[DONE]`."""
    choice = answer["choices"][0]
    message = choice["message"]
    head: dict[str, Any] = {k: answer[k] for k in ("id", "created", "model") if k in answer}
    head["object"] = "chat.completion.chunk"
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": message.get("content")}]
    calls = message.get("tool_calls", [])
    deltas += [{"tool_calls": [{"index": i, **call}]} for i, call in enumerate(calls)]
    finishes: list[str | None] = [None] * len(deltas) + [choice["finish_reason"]]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        for delta, finish in zip([*deltas, {}], finishes, strict=True)
    ]
    if (body.get("stream_options") or {}).get("include_usage"):
        extra: dict[str, Any] = {k: answer[k] for k in ("usage", "timings") if k in answer}
        chunks.append({**head, "choices": [], **extra})
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def calculator_call(step: int) -> dict[str, Any]:
    arguments = json.dumps({"expression": f"{step} + 1"})
    return {
        "content": THOUGHT,
        "tool_calls": [
            {
                "id": f"call{step:04d}",
                "type": "function",
                "function": {"name": "calculator", "arguments": arguments},
            }
        ],
    }


def tool_run_script(steps: int) -> Script:
    def script(asked: int, body: dict[str, Any]) -> dict[str, Any]:
        if asked >= steps:
            return {"content": f"Done: the total is {steps}."}
        return calculator_call(asked)

    return script


def session_script(asked: int, body: dict[str, Any]) -> dict[str, Any]:
    """Odd requests use the calculator once, even ones answer (one tool call per turn)."""
    if body["messages"][-1]["role"] == "user":
        return calculator_call(asked)
    last_user = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    return {"content": f"Here is what I found about {last_user!r}: it comes to {asked}. " * 2}


async def serve_engine(
    stack: AsyncExitStack, client: Client, model: ChatModel, workspace: Path
) -> str:
    """Start the engine's workers in this process (closed with `stack`) on a fresh task queue,
    and return the queue."""
    queue = f"bench-{uuid.uuid4()}"
    for worker in build_workers(
        client,
        task_queue=queue,
        model=model,
        catalog=CATALOG,
        workspace=workspace,
        context_cache=ContextCache(),
    ):
        await stack.enter_async_context(worker)
    return queue


@asynccontextmanager
async def engine(base_url: str, workspace: Path) -> AsyncIterator[tuple[Client, str]]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=f"{sys.prefix}/bin/temporal",
        data_converter=pydantic_data_converter,
    )
    model = OpenAIChatModel(api_key="not-needed", base_url=base_url, default_model="local")
    async with AsyncExitStack() as stack:
        stack.push_async_callback(env.shutdown)
        stack.push_async_callback(model.close)
        yield env.client, await serve_engine(stack, env.client, model, workspace)


def shares(calls: list[TokenUsage], trims: list[int], disturbed: list[bool]) -> dict[str, Any]:
    """The cache share after the first call (of every call, and of the calls no other client
    came before), and what each call after a cut read anew."""
    later = calls[1:]
    prompt = sum(u.prompt_tokens for u in later)
    cached = sum(u.cached_prompt_tokens for u in later)
    alone = [u for u, other in zip(later, disturbed[1:], strict=False) if not other]
    alone_prompt = sum(u.prompt_tokens for u in alone)
    alone_cached = sum(u.cached_prompt_tokens for u in alone)
    after_cuts = [
        {
            "call": index + 1,
            "prompt_tokens": calls[index].prompt_tokens,
            "read_anew": calls[index].prompt_tokens - calls[index].cached_prompt_tokens,
            "full_prompt_rereads": round(
                (calls[index].prompt_tokens - calls[index].cached_prompt_tokens)
                / calls[index].prompt_tokens,
                3,
            ),
        }
        for index in trims
    ]
    return {
        "calls": len(calls),
        "first_call_prompt_tokens": calls[0].prompt_tokens if calls else 0,
        "prompt_tokens_after_first": prompt,
        "cached_tokens_after_first": cached,
        "cache_share_after_first": round(cached / prompt, 4) if prompt else None,
        "calls_after_another_client": sum(disturbed[1:]),
        "cache_share_after_first_undisturbed": (
            round(alone_cached / alone_prompt, 4) if alone_prompt else None
        ),
        "per_call": [(u.prompt_tokens, u.cached_prompt_tokens) for u in calls],
        "calls_after_a_cut": after_cuts,
        "worst_reread": worst_reread(calls),
    }


def cut_calls(calls: list[TokenUsage]) -> list[int]:
    """The calls whose context was cut further than the call before (a compaction)."""
    return [i for i in range(1, len(calls)) if calls[i].prompt_tokens < calls[i - 1].prompt_tokens]


def worst_reread(calls: list[TokenUsage]) -> dict[str, Any] | None:
    """The call after the first that read the largest share of its prompt anew (a cut, or
    anything else that changed the start of the prompt), as a share of its whole prompt."""
    later = [(n, u) for n, u in enumerate(calls, 1) if n > 1 and u.prompt_tokens]
    if not later:
        return None
    call, usage = max(later, key=lambda c: 1 - c[1].cached_prompt_tokens / c[1].prompt_tokens)
    anew = usage.prompt_tokens - usage.cached_prompt_tokens
    return {
        "call": call,
        "prompt_tokens": usage.prompt_tokens,
        "read_anew": anew,
        "full_prompt_rereads": round(anew / usage.prompt_tokens, 3),
    }


def tool_run_prompt(steps: int) -> str:
    """The tool run's task (every system's)."""
    return f"Add one {steps} times with the calculator, one call at a time."


def tool_run_input(steps: int, window: int) -> dict[str, Any]:
    """Ours' tool run: the task, the calculator, room for every step, the context window."""
    return {
        "prompt": tool_run_prompt(steps),
        "tools": ["calculator"],
        "max_iterations": steps + 2,
        "max_context_tokens": window,
    }


def session_message(turn: int) -> str:
    """The session's `turn`-th user message (every system's)."""
    return f"Question {turn}: what is {turn} + 1, and why?"


async def tool_run(upstream: str, workspace: Path, steps: int, window: int) -> dict[str, Any]:
    with scripted_proxy(upstream, tool_run_script(steps)) as proxy:
        async with engine(proxy.base_url, workspace) as (client, queue):
            result = await client.execute_workflow(
                "AgentWorkflow",
                tool_run_input(steps, window),
                id=f"prompt-cache-run-{uuid.uuid4()}",
                task_queue=queue,
                result_type=AgentResult,
            )
    calls = [c.usage for c in result.model_calls]
    return {
        "steps": len(result.steps),
        "max_context_tokens": window,
        **shares(calls, cut_calls(calls), proxy.disturbed),
    }


async def session_turns(client: Client, queue: str, turns: int) -> list[TurnResult]:
    """Ours' session: `turns` messages to one `SessionWorkflow`, each awaited (its result)."""
    results = []
    session_id = f"prompt-cache-session-{uuid.uuid4()}"
    for turn in range(1, turns + 1):
        start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            "SessionWorkflow",
            {"agent": {"tools": ["calculator"]}},
            id=session_id,
            task_queue=queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        results.append(
            await client.execute_update_with_start_workflow(
                "send",
                {"text": session_message(turn)},
                start_workflow_operation=start,
                result_type=TurnResult,
            )
        )
    return results


async def session(upstream: str, workspace: Path, turns: int) -> dict[str, Any]:
    with scripted_proxy(upstream, session_script) as proxy:
        async with engine(proxy.base_url, workspace) as (client, queue):
            usages = [r.usage for r in await session_turns(client, queue, turns)]
    # a turn is disturbed when any of its requests was (two requests a turn: a call, an answer)
    turn_disturbed = [any(proxy.disturbed[2 * i : 2 * i + 2]) for i in range(len(usages))]
    summed = shares(usages, [], turn_disturbed)
    summed["per_turn"] = summed.pop("per_call")
    summed["turns"] = summed.pop("calls")
    return summed


@contextmanager
def fake_upstream(base_url: str) -> Iterator[str]:
    """`base_url`, or with `fake` the base URL of a fake server acting as llama-server with
    a prompt cache (`FakeOpenAIServer.prompt_cache`)."""
    if base_url != "fake":
        yield base_url
        return
    with fake.FakeOpenAIServer() as server:
        server.prompt_cache = "llama-server"
        server.set_handler(lambda body: fake.text("."))
        yield server.base_url.rstrip("/")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base-url",
        required=True,
        help="llama-server's /v1 URL, or `fake`: the fake server acting as a prompt cache "
        "(what the engine sends, without a real server)",
    )
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--window", type=int, default=WINDOW, help="max_context_tokens")
    parser.add_argument("--only", choices=["tool_run", "session"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with TemporaryDirectory() as root, fake_upstream(args.base_url) as upstream:
        workspace = Path(root)
        results: dict[str, Any] = {"model_server": args.base_url}
        if args.only in (None, "tool_run"):
            results["tool_run"] = await tool_run(upstream, workspace, args.steps, args.window)
        if args.only in (None, "session"):
            results["session"] = await session(upstream, workspace, args.turns)
    text = json.dumps(results, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
