"""Issue 36 part 1 on the peers: workload 6 of `make bench-peers`, the model server's prompt
cache over the same two cases `bench.prompt_cache` runs ours through, on every system.

    python -m bench.peers.run --only 6 [--model-url <llama-server /v1 URL>] [--quick]

Each system runs a 30-step tool run (one calculator call a step, the same task) and a 20-turn
session (a calculator call and an answer a turn, the same messages), each case on a fresh worker
of its own whose model server is a `bench.prompt_cache.ScriptedProxy`: it forwards every request
unchanged to the model server with `max_tokens: 1`, answers with the scripted reply (the same
script for every system, so every run has the same shape), and meters each request from the
server's own answer (`usage`, llama-server's `timings`). Every system is measured by that
meter, ours too: the share of prompt tokens served from the cache after the first call, and the
worst re-read (the call after the first that read the largest share of its prompt anew).

Ours runs its tool run with `max_context_tokens` `bench.prompt_cache.WINDOW` and its session
with the defaults; the peers have no context fitting of their own, so their prompts only grow.
The peers' sessions keep the conversation as each one's docs show (`to_input_list()`,
`message_history=all_messages()`; `OpenAIAgentsSession`, `PydanticAISession`, the harness's
`chat` message). Without `--model-url` the model server is the fake one acting as llama-server's
cache (`bench.prompt_cache.fake_upstream`: JSON characters / 4 as tokens): a test of the
plumbing, not a measurement.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import Client, WorkflowHandle

from bench import prompt_cache
from bench.harness import Bench
from bench.peers.systems import System
from bench.run_all import say

CASE_TIMEOUT_SECONDS = 3600
"""One case on one system, at most (a real model on 2 shared cores: minutes)."""
TURN_CALLS = 10
"""Most model calls a session turn may make (each takes two)."""
SESSION_WORKFLOWS = {"openai_agents": "OpenAIAgentsSession", "pydantic_ai": "PydanticAISession"}
"""The session workflow of each peer that has one (the harness is a session itself)."""
CASES = ("tool_run", "session")

Drive = Callable[[Client, System, str, dict[str, int]], Awaitable[None]]


async def tool_run(client: Client, system: System, queue: str, size: dict[str, int]) -> None:
    """The tool run on `system`: ours with its context window, a peer as it runs any task."""
    steps = size["cache_steps"]
    workflow_id = f"cache-run-{system.venv or 'ours'}-{uuid.uuid4().hex[:8]}"
    if not system.peer:
        payload = prompt_cache.tool_run_input(steps, prompt_cache.WINDOW)
        await client.execute_workflow("AgentWorkflow", payload, id=workflow_id, task_queue=queue)
        return
    prompt = prompt_cache.tool_run_prompt(steps)
    handle = await system.start(client, queue, prompt, ["calculator"], steps + 2, workflow_id)
    await handle.result()


async def session(client: Client, system: System, queue: str, size: dict[str, int]) -> None:
    """The session on `system`: each message sent once the turn before it has ended."""
    turns = size["cache_turns"]
    if not system.peer:
        await prompt_cache.session_turns(client, queue, turns)
        return
    workflow_id = f"cache-session-{system.venv}-{uuid.uuid4().hex[:8]}"
    if system.harness:
        await harness_session(client, system, queue, workflow_id, turns)
        return
    params = {"tools": ["calculator"], "max_turns": TURN_CALLS}
    name = SESSION_WORKFLOWS[str(system.venv)]
    handle = await client.start_workflow(name, params, id=workflow_id, task_queue=queue)
    for turn in range(1, turns + 1):
        await handle.execute_update("send", prompt_cache.session_message(turn))
    await handle.signal("close")
    await handle.result()


async def harness_session(
    client: Client, system: System, queue: str, workflow_id: str, turns: int
) -> None:
    """The harness's session: a `chat` message a turn (its `send_agent_message` update returns
    once the message is admitted, so the turn's end is read from `agent_status`), then `close`,
    which it drains."""
    tools = ["calculator"]
    first = prompt_cache.session_message(1)
    handle = await system.start(
        client, queue, first, tools, TURN_CALLS, workflow_id, close=False, message="chat"
    )
    await turn_ended(handle)
    for turn in range(2, turns + 1):
        payload = {
            "prompt": prompt_cache.session_message(turn),
            "tools": tools,
            "max_turns": TURN_CALLS,
        }
        await handle.execute_update("send_agent_message", {"type": "chat", "payload": payload})
        await turn_ended(handle)
    await handle.signal("close")
    await handle.result()


async def turn_ended(handle: WorkflowHandle[Any, Any]) -> None:
    """Wait until the harness agent is idle: no turn open, none queued."""
    while True:
        status = await handle.query("agent_status")
        if not status["turn_active"] and not status["pending_turns"]:
            return
        await asyncio.sleep(0.2)


DRIVERS: dict[str, Drive] = {"tool_run": tool_run, "session": session}
SCRIPTS: dict[str, Callable[[dict[str, int]], prompt_cache.Script]] = {
    "tool_run": lambda size: prompt_cache.tool_run_script(size["cache_steps"]),
    "session": lambda size: prompt_cache.session_script,
}


async def one_case(
    bench: Bench, system: System, case: str, upstream: str, size: dict[str, int]
) -> dict[str, Any]:
    """One case on a fresh worker of `system` behind its own metering proxy: the shares; a
    run that failed (e.g. its prompt outgrew the server's context) has them over the calls
    it made, and its error."""
    error: dict[str, str] = {}
    with prompt_cache.scripted_proxy(upstream, SCRIPTS[case](size)) as proxy:
        proc, queue = system.worker(bench, model_url=proxy.base_url)
        try:
            drive = DRIVERS[case](bench.client, system, queue, size)
            await asyncio.wait_for(drive, timeout=CASE_TIMEOUT_SECONDS)
        except Exception as failed:
            error["error"] = f"{type(failed).__name__}: {failed}"[:300]
        finally:
            bench.stop_worker(proc)
    calls = proxy.metered
    window = prompt_cache.WINDOW if case == "tool_run" and not system.peer else None
    return {
        "max_context_tokens": window,
        **prompt_cache.shares(calls, prompt_cache.cut_calls(calls), proxy.disturbed),
        **error,
    }


async def measure(
    bench: Bench, systems: list[System], model_url: str | None, size: dict[str, int]
) -> dict[str, Any]:
    """Workload 6: every case on every system against `model_url` (None: the fake cache)."""
    result: dict[str, Any] = {
        "model_server": model_url or "fake",
        "steps": size["cache_steps"],
        "turns": size["cache_turns"],
        "systems": {},
    }
    with prompt_cache.fake_upstream(model_url or "fake") as upstream:
        for system in systems:
            entry = result["systems"].setdefault(system.name, {})
            for case in CASES:
                say(f"  6 prompt cache: {system.name}, {case}")
                try:
                    entry[case] = await one_case(bench, system, case, upstream, size)
                except Exception as error:
                    entry[case] = {"error": f"{type(error).__name__}: {error}"[:300]}
                    say(f"  {system.name}: cannot run: {entry[case]['error']}")
    return result


HEADER = [
    "system",
    "case",
    "calls",
    "prompt tokens after the first call",
    "cached",
    "share",
    "worst re-read (call: read anew / whole prompt)",
]


def rows(cache: dict[str, Any]) -> list[list[str]]:
    """Workload 6's table: a row per system and case."""
    found = []
    for name, cases in cache["systems"].items():
        for case, part in cases.items():
            label = (
                f"{cache['steps']}-step tool run"
                if case == "tool_run"
                else f"{cache['turns']}-turn session"
            )
            if "error" in part and part.get("cache_share_after_first") is None:
                found.append([name, label, "–", "–", "–", f"cannot run: {part['error']}", "–"])
                continue
            found.append([name, label, *figures(part)])
    return found


def figures(part: dict[str, Any]) -> list[str]:
    """One case's cells: calls, tokens, the share (and without the calls after another
    client of the server, where there were some), the worst re-read."""
    share = part["cache_share_after_first"]
    cell = "–" if share is None else f"{share:.1%}"
    if part["calls_after_another_client"] and part["cache_share_after_first_undisturbed"]:
        alone = part["cache_share_after_first_undisturbed"]
        cell += f" ({alone:.1%} without {part['calls_after_another_client']} after another client)"
    if "error" in part:
        cell += f"; stopped after {part['calls']} calls: {part['error']}"
    worst = part["worst_reread"]
    reread = "–" if worst is None else f"call {worst['call']}: {worst['full_prompt_rereads']:.3f}"
    return [
        str(part["calls"]),
        f"{part['prompt_tokens_after_first']:,}",
        f"{part['cached_tokens_after_first']:,}",
        cell,
        reread,
    ]
